import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Starts the real server on the embedded database and resolves with its base URL. */
function start(dataDir: string): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'server.ts')], {
    env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' },
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
      expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(2);

      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);

      // A second start finds the data, does not seed again, and prints the same demo key.
      const again = await start(dataDir);
      expect(again.output()).toContain(key as string);
      const companies = await fetch(`${again.base}/api/v1/companies`, { headers: { authorization: `Bearer ${key}` } });
      expect(((await companies.json()) as { data: unknown[] }).data).toHaveLength(2);
      const stopped = new Promise<number | null>((resolve) => again.child.once('exit', (code) => resolve(code)));
      again.child.kill('SIGINT');
      expect(await stopped).toBe(0);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
