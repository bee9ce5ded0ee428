import { randomUUID } from 'node:crypto';
import { documents } from '@firm/db';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { and, count, eq } from 'drizzle-orm';
import { expect } from 'vitest';
import type { Page } from 'playwright-core';
import { DEMO_PASSWORD, type TestApp } from '../../testing';
import { bearer, connect, registerClient, signIn } from '../oauth/fixtures';

/** Test helpers for the approvers' pages: an agent whose big bills the client's policy holds for approval. */

export const AGENT_SCOPES = [
  'acct:clients:read',
  'acct:entities:read',
  'acct:entities:write',
  'acct:transactions:read',
  'acct:transactions:create',
  'acct:transactions:update',
].join(' ');

/** Bills over 10,000.00 wait for a person, for agents writing to this client. */
export const HOLD_OVER_10K = { mode: 'approval', amountOverCents: 1_000_000 } as const;

export interface HeldAgent {
  agent: { authorization: string };
  vendorId: string;
  base: string;
  billOf(amount: number): { entityType: 'bill'; payload: Record<string, unknown> };
  /** An agent's bill; with a policy holding it, 202 and a pending proposal. */
  propose(amount: number, key: string, reason?: string): Promise<{ statusCode: number; id: string }>;
  /** The client's bills, counted in the database. */
  bills(): Promise<number>;
}

/** An OAuth agent named `name`, connected by the owner, and a vendor to bill; the client's policy holds big bills. */
export async function heldAgent(t: TestApp, name = 'Bookkeeping Agent'): Promise<HeldAgent> {
  const base = `/agent/v1/acct/clients/${t.orgId}`;
  const jar = await signIn(t.app, DEMO_OWNER_EMAIL);
  const registered = await registerClient(t.database.db, {
    isPublic: true,
    name,
    redirectUris: ['http://127.0.0.1:33418/callback'],
  });
  const agent = bearer((await connect(t.app, jar, registered, { scope: AGENT_SCOPES })).access_token);
  const policy = await t.app.inject({
    method: 'PATCH',
    url: base,
    headers: t.auth,
    payload: { approvalPolicy: HOLD_OVER_10K },
  });
  if (policy.statusCode !== 200) throw new Error(`policy: ${policy.statusCode} ${policy.body}`);
  const vendor = await t.app.inject({
    method: 'POST',
    url: `${base}/entities/Vendor`,
    headers: { ...agent, 'idempotency-key': randomUUID() },
    payload: { DisplayName: `${name} Supplies` },
  });
  if (vendor.statusCode !== 201) throw new Error(`vendor: ${vendor.statusCode} ${vendor.body}`);
  const vendorId = vendor.json().data.Id as string;
  const billOf = (amount: number) => ({
    entityType: 'bill' as const,
    payload: {
      VendorRef: { value: vendorId },
      TxnDate: '2026-04-02',
      Line: [
        {
          Amount: amount,
          DetailType: 'AccountBasedExpenseLineDetail',
          AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6300') } },
        },
      ],
    },
  });
  return {
    agent,
    vendorId,
    base,
    billOf,
    async propose(amount, key, reason) {
      const res = await t.app.inject({
        method: 'POST',
        url: `${base}/transactions`,
        headers: { ...agent, 'idempotency-key': key, ...(reason ? { 'x-agent-reason': reason } : {}) },
        payload: billOf(amount),
      });
      return { statusCode: res.statusCode, id: res.json().data?.id as string };
    },
    async bills() {
      const [row] = await t.database.db
        .select({ n: count() })
        .from(documents)
        .where(and(eq(documents.organizationId, t.orgId), eq(documents.type, 'bill')));
      return row?.n ?? 0;
    },
  };
}

/** Debian's Chromium, driven through playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Decides on the proposal whose page the browser shows: the note, then the button; back on the page it ends on. */
export async function decideOnPage(page: Page, decision: 'Approve' | 'Reject', note: string): Promise<void> {
  await page.getByLabel(/^Note/).fill(note);
  await page.getByRole('button', { name: decision }).click();
  await page.waitForURL(/\?done=/);
}

/** Opens a page that needs a session, signs in on the form it is sent to, and comes back. */
export async function signInThrough(page: Page, url: string, email = DEMO_OWNER_EMAIL): Promise<void> {
  await page.goto(url);
  expect(new URL(page.url()).pathname).toBe('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(DEMO_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.pathname !== '/login');
}
