import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../apps/api/src/testing';
import { CLIENT_SCHEMA_FILE, clientSchemaSource } from '../scripts/client-schema';

const root = join(import.meta.dirname, '..');

describe('the generated client', () => {
  it('is up to date with the routes (npm run client:generate)', async () => {
    expect(await readFile(CLIENT_SCHEMA_FILE, 'utf8')).toBe(await clientSchemaSource());
  }, 60_000);

  it('has named types for the shared schemas', async () => {
    const source = await readFile(CLIENT_SCHEMA_FILE, 'utf8');
    for (const name of ['Account', 'JournalEntry', 'Document', 'Error', 'PostingReceipt', 'TrialBalance']) {
      expect(source).toMatch(new RegExp(`^ {8}${name}: \\{`, 'm'));
    }
  });
});

describe('examples/partner-app.ts', () => {
  let t: TestApp;
  let baseUrl: string;
  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  it('runs against the server with the demo key, twice', async () => {
    const run = () =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', join(root, 'examples', 'partner-app.ts')], {
        cwd: root,
        env: { ...process.env, BASE_URL: baseUrl, API_KEY: t.demo.apiKey },
      });
    const first = await run();
    expect(first.stdout).toMatch(/^company: /m);
    expect(first.stdout).toMatch(/^posted: entry [0-9a-f-]{36}; retry replayed: true$/m);
    expect(first.stdout).toMatch(/^trial balance: Training debit 45000 cents$/m);
    // The account exists the second time; a second purchase doubles the debit.
    const second = await run();
    expect(second.stdout).toMatch(/^trial balance: Training debit 90000 cents$/m);
  }, 60_000);
});
