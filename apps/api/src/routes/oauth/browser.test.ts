import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DEMO_PASSWORD, type TestApp } from '../../testing';
import { addUser, authorizeParams, pkce, registerClient } from './fixtures';

/** Sign-in and consent driven in a real browser: Debian's Chromium through playwright-core. */

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`browser.test.ts: SKIPPED, ${CHROMIUM} is not installed (apt-get install -y chromium to run it)`);
}

// CI installs Chromium (.ci/run): there a missing browser fails the run instead of skipping the test quietly.
describe.runIf(process.env.CI === 'true')('the browser on CI', () => {
  it(`is installed at ${CHROMIUM}`, () => {
    expect(hasChromium).toBe(true);
  });
});

const CALLBACK = 'http://127.0.0.1:9/callback';

describe.skipIf(!hasChromium)('sign-in and consent in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp();
    await addUser(t.database.db, t.demo.firmId, 'member', 'member@demo-firm.test');
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A fresh browser whose callback URL is answered in place of the partner app. */
  async function openAuthorization(params: Record<string, string>) {
    const context = await browser.newContext();
    const page = await context.newPage();
    let callback: URL | null = null;
    await page.route(`${CALLBACK}**`, async (route) => {
      callback = new URL(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'partner app callback' });
    });
    await page.goto(`${base}/api/oauth/authorize?${new URLSearchParams(params)}`);
    return { context, page, callback: () => callback as URL | null };
  }

  async function signIn(page: Page, email: string) {
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(DEMO_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForLoadState();
  }

  it('signs in, shows the consent page, and returns a code the app can exchange', async () => {
    const { client, secret } = await registerClient(t.database.db, { name: 'Ledger Sync', redirectUris: [CALLBACK] });
    const { verifier, challenge } = pkce();
    const params = authorizeParams(client, challenge, { scope: 'accounts:read entries:write', state: 'browser-state' });
    const { context, page, callback } = await openAuthorization(params);
    try {
      await signIn(page, 'owner@demo-firm.test');
      expect(new URL(page.url()).pathname).toBe('/api/oauth/authorize');
      await expect(page.locator('h1').textContent()).resolves.toBe('Connect Ledger Sync?');
      const text = (await page.textContent('main')) ?? '';
      expect(text).toContain('127.0.0.1');
      expect(text).toContain('Read charts of accounts and account balances');
      expect(text).toContain('Create, post and void journal entries');
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === '__Host-session');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', secure: true });

      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL(`${CALLBACK}**`);
      const url = callback();
      expect(url?.searchParams.get('state')).toBe('browser-state');
      const code = url?.searchParams.get('code') as string;
      expect(code).toMatch(/^mcp_ac_/);

      const res = await fetch(`${base}/api/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.clientId}:${secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          redirect_uri: CALLBACK,
        }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { scope: string }).scope).toBe('accounts:read entries:write');
    } finally {
      await context.close();
    }
  });

  it('denying returns access_denied with the state', async () => {
    const { client } = await registerClient(t.database.db, { name: 'Ledger Sync', redirectUris: [CALLBACK] });
    const { context, page, callback } = await openAuthorization(authorizeParams(client, pkce().challenge));
    try {
      await signIn(page, 'owner@demo-firm.test');
      await page.getByRole('button', { name: 'Deny' }).click();
      await page.waitForURL(`${CALLBACK}**`);
      expect(callback()?.searchParams.get('error')).toBe('access_denied');
      expect(callback()?.searchParams.get('state')).toBe('st-123');
    } finally {
      await context.close();
    }
  });

  it('shows a member that only owners and admins can connect apps', async () => {
    const { client } = await registerClient(t.database.db, { name: 'Ledger Sync', redirectUris: [CALLBACK] });
    const { context, page, callback } = await openAuthorization(authorizeParams(client, pkce().challenge));
    try {
      await signIn(page, 'member@demo-firm.test');
      await expect(page.locator('h1').textContent()).resolves.toBe('You cannot connect apps');
      expect(await page.textContent('main')).toContain('Only owners and admins');
      expect(callback()).toBeNull();
    } finally {
      await context.close();
    }
  });
});
