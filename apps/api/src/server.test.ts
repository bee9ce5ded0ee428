import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pdfText } from './routes/reports/fixtures';

/** Starts the real server on the embedded database and resolves with its base URL. */
function start(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'server.ts')], {
    // The sandbox bank (port 4010) is left to shutdown.test.ts, which tests it: these servers run beside it.
    env: {
      ...process.env,
      DATABASE_URL: '',
      DATA_DIR: dataDir,
      PORT: '0',
      LOG_LEVEL: 'warn',
      SANDBOX_AGGREGATOR: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /API:\s+(http:\/\/\S+)\/api\/v1/.exec(output);
      if (match?.[1]) resolve({ child, base: match[1], output: () => output });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited early (${code}): ${output}`)));
  });
}

describe('npm start on the embedded database', () => {
  it('migrates, seeds, serves with the printed key, and shuts down cleanly on SIGTERM', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'server-'));
    try {
      const { child, base, output } = await start(dataDir);
      const key = /Demo API key: (dk_live_\S+)/.exec(output())?.[1];
      expect(key).toBeDefined();
      const saved = JSON.parse(await readFile(join(dataDir, 'demo-credentials.json'), 'utf8'));
      expect(saved.apiKey).toBe(key);
      const res = await fetch(`${base}/api/v1/companies`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      const companies0 = ((await res.json()) as { data: { id: string; name: string }[] }).data;
      expect(companies0).toHaveLength(2);

      // The demo companies come with a year of books: the trial balance has figures, and so has the financial
      // packet's PDF.
      const org = companies0.find((c) => c.name === 'Northwind Bakery LLC')?.id as string;
      const headers = { authorization: `Bearer ${key}`, 'x-organization-id': org };
      const today = new Date();
      const lastMonthEnd = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 0))
        .toISOString()
        .slice(0, 10);
      const yearStart = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() - 12, 1))
        .toISOString()
        .slice(0, 10);
      const tb = (await (
        await fetch(`${base}/api/v1/reports/trial-balance?endDate=${lastMonthEnd}`, { headers })
      ).json()) as { data: { totalDebitCents: number; totalCreditCents: number } };
      expect(tb.data.totalDebitCents).toBeGreaterThan(0);
      expect(tb.data.totalDebitCents).toBe(tb.data.totalCreditCents);
      const packet = await fetch(
        `${base}/api/v1/reports/export?report=financial-packet&format=pdf&startDate=${yearStart}&endDate=${lastMonthEnd}`,
        { headers },
      );
      expect(packet.status).toBe(200);
      expect(packet.headers.get('content-type')).toMatch(/application\/pdf/);
      const text = (await pdfText(Buffer.from(await packet.arrayBuffer()))).join(' ');
      const figures = text.match(/\(?\d{1,3}(?:,\d{3})*\.\d{2}\)?/g) ?? [];
      expect(figures.length).toBeGreaterThan(20);
      expect(figures.filter((f) => !/^\(?0\.00\)?$/.test(f)).length).toBeGreaterThan(20);
      expect(text).toContain('Northwind Bakery LLC');

      // The agent audit trail needs no configuration: its key is made once in the data directory, outside the
      // database, and the CLI (run in this server) checks the chain and its anchor with it.
      const agentCall = await fetch(`${base}/agent/v1/acct/clients`, { headers: { authorization: `Bearer ${key}` } });
      expect(agentCall.status).toBe(200);
      const auditKey = await readFile(join(dataDir, 'audit-hmac-keys'), 'utf8');
      expect(auditKey).toMatch(/^local-[0-9a-f]{8}:/);
      const verified = await cli(dataDir, 'audit', 'verify');
      expect(verified, verified.stderr).toMatchObject({ code: 0 });
      expect(verified.stdout).toMatch(/audit trail intact: 1 agent audit event of 1 firm/);
      expect(verified.stdout).toMatch(
        /1 event; HMAC-keyed from event 1; head event 1 [0-9a-f]{64}; anchored at event 1/,
      );

      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);

      // A second start finds the data, does not seed again, and prints the same demo key.
      const again = await start(dataDir);
      expect(again.output()).toContain(key as string);
      const companies = await fetch(`${again.base}/api/v1/companies`, { headers: { authorization: `Bearer ${key}` } });
      expect(((await companies.json()) as { data: unknown[] }).data).toHaveLength(2);
      // The same key after the restart: the chain goes on and still verifies.
      await fetch(`${again.base}/agent/v1/acct/clients`, { headers: { authorization: `Bearer ${key}` } });
      expect(await readFile(join(dataDir, 'audit-hmac-keys'), 'utf8')).toBe(auditKey);
      const reverified = await cli(dataDir, 'audit', 'verify');
      expect(reverified, reverified.stderr).toMatchObject({ code: 0 });
      expect(reverified.stdout).toMatch(/audit trail intact: 2 agent audit events of 1 firm/);
      const stopped = new Promise<number | null>((resolve) => again.child.once('exit', (code) => resolve(code)));
      again.child.kill('SIGINT');
      expect(await stopped).toBe(0);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe('npm start in production', () => {
  it('refuses to start with the aggregator left at the sandbox, naming the variable, and touches nothing', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'production-server-'));
    const keys = `k1:${Buffer.alloc(32, 1).toString('base64')}`;
    try {
      const refused = await start(dataDir, {
        NODE_ENV: 'production',
        PUBLIC_ORIGIN: 'https://books.example.com',
        WEBHOOK_SECRET_KEYS: keys,
        AUDIT_HMAC_KEYS: keys,
        BANK_TOKEN_KEYS: keys,
        PLAID_CLIENT_ID: 'sandbox-client-id',
        PLAID_SECRET: 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5',
      }).catch((err: Error) => err);
      expect(refused).toBeInstanceOf(Error);
      const message = (refused as Error).message;
      expect(message).toMatch(/exited early \(1\)/);
      expect(message).toMatch(/PLAID_CLIENT_ID: a sandbox's value, refused when NODE_ENV=production/);
      expect(message).not.toMatch(/\n\s+at /);
      expect(await readdir(dataDir)).toEqual([]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

/** Runs `npm run cli` (its bin) on the embedded database in dataDir; never throws on a non-zero exit. */
async function cli(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = join(import.meta.dirname, '..', '..', 'cli', 'src', 'bin.ts');
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', bin, ...args], {
      env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('one process owns the embedded data directory', () => {
  it('refuses a second server, runs the CLI through the owner, and keeps every acknowledged write', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'owner-server-'));
    try {
      // The first test covers the demo's books; this one starts on empty books, more quickly.
      const first = await start(dataDir, { DEMO_HISTORY: 'false' });
      const saved = JSON.parse(await readFile(join(dataDir, 'demo-credentials.json'), 'utf8'));
      const auth = { authorization: `Bearer ${saved.apiKey}` };

      // A second server on the same directory stops at once and says why, instead of forking the data.
      const second = await start(dataDir).catch((err: Error) => err);
      expect(second).toBeInstanceOf(Error);
      expect((second as Error).message).toMatch(/exited early \(1\)/);
      expect((second as Error).message).toMatch(/in use by another process \(pid \d+\)/);
      expect((second as Error).message).not.toMatch(/\n\s+at /);

      // The CLI's key is written by the running server, so it works at once.
      const created = await cli(dataDir, 'api-key', 'create', '--firm', saved.firmId, '--json');
      expect(created.code).toBe(0);
      const cliKey = JSON.parse(created.stdout).apiKey as string;
      const withCliKey = await fetch(`${first.base}/api/v1/companies`, {
        headers: { authorization: `Bearer ${cliKey}` },
      });
      expect(withCliKey.status).toBe(200);

      const org = saved.organizations[0].id as string;
      const account = await fetch(`${first.base}/api/v1/accounts`, {
        method: 'POST',
        headers: { ...auth, 'x-organization-id': org, 'content-type': 'application/json' },
        body: JSON.stringify({ code: '6950', name: 'Training', type: 'expense' }),
      });
      expect(account.status).toBe(201);
      const accountId = ((await account.json()) as { data: { id: string } }).data.id;

      // The process dies without any chance to clean up; the next one starts at once and has every write.
      first.child.kill('SIGKILL');
      await exited(first.child);
      const restarted = await start(dataDir);
      try {
        const after = await fetch(`${restarted.base}/api/v1/accounts/${accountId}`, {
          headers: { authorization: `Bearer ${cliKey}`, 'x-organization-id': org },
        });
        expect(after.status).toBe(200);
        expect(((await after.json()) as { data: { name: string } }).data.name).toBe('Training');
      } finally {
        const stopped = exited(restarted.child);
        restarted.child.kill('SIGTERM');
        expect(await stopped).toBe(0);
      }

      // With no server running, the CLI opens the directory itself, and its writes are there for the next server.
      const offline = await cli(dataDir, 'api-key', 'create', '--firm', saved.firmId, '--json');
      expect(offline.code).toBe(0);
      const offlineKey = JSON.parse(offline.stdout).apiKey as string;
      const last = await start(dataDir);
      try {
        const res = await fetch(`${last.base}/api/v1/companies`, {
          headers: { authorization: `Bearer ${offlineKey}` },
        });
        expect(res.status).toBe(200);
      } finally {
        const stopped = exited(last.child);
        last.child.kill('SIGTERM');
        expect(await stopped).toBe(0);
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
