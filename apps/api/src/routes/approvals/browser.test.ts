import { existsSync } from 'node:fs';
import { agentProposals, documents } from '@firm/db';
import { and, eq } from 'drizzle-orm';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { CHROMIUM, CHROMIUM_ARGS, decideOnPage, heldAgent, signInThrough } from './fixtures';

/** The approvers' pages driven in a real browser: Debian's Chromium through playwright-core. */

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`approvals/browser.test.ts: SKIPPED, ${CHROMIUM} is not installed (apt-get install -y chromium)`);
}

// CI installs Chromium (.ci/run): there a missing browser fails the run instead of skipping the test quietly.
describe.runIf(process.env.CI === 'true')('the browser on CI', () => {
  it(`is installed at ${CHROMIUM}`, () => {
    expect(hasChromium).toBe(true);
  });
});

describe.skipIf(!hasChromium)("the approvers' pages in Chromium", () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('signs in, lists two pending proposals, approves one and rejects the other, each with a note', async () => {
    const held = await heldAgent(t);
    const first = await held.propose(15000, 'browser-first', 'New laptops for the team');
    const second = await held.propose(22000, 'browser-second', 'Office furniture');
    expect([first.statusCode, second.statusCode]).toEqual([202, 202]);
    const before = await held.bills();

    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await signInThrough(page, `${base}/approvals`);
      expect(new URL(page.url()).pathname).toBe('/approvals');
      await expect(page.locator('h1').textContent()).resolves.toBe('Agent proposals');
      await expect(page.locator('section.proposal').count()).resolves.toBe(2);
      const listed = (await page.textContent('main')) ?? '';
      expect(listed).toContain('New laptops for the team');
      expect(listed).toContain('15,000.00');
      expect(listed).toContain('22,000.00');

      await page.locator(`a[href="/approvals/${first.id}"]`).click();
      await decideOnPage(page, 'Approve', 'Checked against the quote');
      expect(page.url()).toBe(`${base}/approvals/${first.id}?done=executed`);
      expect(await page.textContent('main')).toContain('Approved: the write ran.');

      await page.getByRole('link', { name: 'All proposals' }).click();
      await expect(page.locator('section.proposal').count()).resolves.toBe(1);
      await page.locator(`a[href="/approvals/${second.id}"]`).click();
      await decideOnPage(page, 'Reject', 'Not in this quarter’s budget');
      expect(await page.textContent('main')).toContain('Rejected: nothing was written.');
    } finally {
      await context.close();
    }

    const proposals = await t.database.db
      .select()
      .from(agentProposals)
      .where(eq(agentProposals.organizationId, t.orgId));
    const byId = new Map(proposals.map((p) => [p.id, p]));
    expect(byId.get(first.id)).toMatchObject({ status: 'executed', decisionNote: 'Checked against the quote' });
    expect(byId.get(second.id)).toMatchObject({ status: 'rejected', decisionNote: 'Not in this quarter’s budget' });
    const billId = (byId.get(first.id)?.resultBody as { data: { transactionId: string } }).data.transactionId;
    const written = await t.database.db
      .select({ id: documents.id })
      .from(documents)
      .where(and(eq(documents.organizationId, t.orgId), eq(documents.id, billId)));
    expect(written).toHaveLength(1);
    expect(await held.bills()).toBe(before + 1);
    const rejected = await t.app.inject({
      method: 'POST',
      url: `${held.base}/transactions`,
      headers: { ...held.agent, 'idempotency-key': 'browser-second' },
      payload: held.billOf(22000),
    });
    expect(rejected.statusCode).toBe(202);
    expect(rejected.json().data.status).toBe('rejected');
    expect(await held.bills()).toBe(before + 1);
  }, 60_000);
});
