import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from './connection';
import { DataDirInUseError, type OwnerIo, claimDataDir, ownsDataDir, runInOwner, socketAddress } from './owner';

let dataDir: string;
beforeEach(async () => {
  dataDir = join(await mkdtemp(join(tmpdir(), 'owner-')), 'data');
});
afterEach(async () => {
  await rm(join(dataDir, '..'), { recursive: true, force: true });
});

function collect(): OwnerIo & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (t) => lines.push(`out:${t}`), err: (t) => lines.push(`err:${t}`) };
}

describe('the owner of an embedded data directory', () => {
  it('is one process: a second claim names the owner and the way out', async () => {
    const owner = await claimDataDir(dataDir);
    try {
      const second = await claimDataDir(dataDir).catch((e: unknown) => e);
      expect(second).toBeInstanceOf(DataDirInUseError);
      expect((second as DataDirInUseError).pid).toBe(process.pid);
      expect((second as Error).message).toMatch(/in use by another process \(pid \d+\).*DATA_DIR.*DATABASE_URL/);
    } finally {
      await owner.release();
    }
    // Released: the directory can be claimed again.
    const again = await claimDataDir(dataDir);
    await again.release();
  });

  it('is the only process that may open the database files', async () => {
    expect(() => openDatabase({ dataDir })).toThrow(/claimDataDir/);
    const owner = await claimDataDir(dataDir);
    expect(ownsDataDir(dataDir)).toBe(true);
    const database = openDatabase({ dataDir });
    await database.migrate();
    await database.close();
    await owner.release();
    expect(ownsDataDir(dataDir)).toBe(false);
    expect(() => openDatabase({ dataDir })).toThrow(/claimDataDir/);
  });

  it('runs forwarded commands and returns their output and exit code', async () => {
    const owner = await claimDataDir(dataDir);
    try {
      const seen: string[][] = [];
      owner.serve(async (argv, io) => {
        seen.push(argv);
        io.out(`ran ${argv.join(' ')}`);
        io.err('a warning');
        return argv[0] === 'fail' ? 1 : 0;
      });
      const io = collect();
      expect(await runInOwner(dataDir, ['api-key', 'create'], io)).toBe(0);
      expect(io.lines).toEqual(['out:ran api-key create', 'err:a warning']);
      expect(await runInOwner(dataDir, ['fail'], collect())).toBe(1);
      // Standard input read by the requesting process travels with the command.
      owner.serve(async (_argv, commandIo) => {
        commandIo.out(`read ${await commandIo.stdin?.()}`);
        return 0;
      });
      const withStdin = collect();
      expect(await runInOwner(dataDir, ['user', 'create'], withStdin, 'a secret\n')).toBe(0);
      expect(withStdin.lines).toEqual(['out:read a secret\n']);
      expect(seen).toEqual([['api-key', 'create'], ['fail']]);
    } finally {
      await owner.release();
    }
  });

  it('waits for the owner to be ready before running a forwarded command', async () => {
    const owner = await claimDataDir(dataDir);
    try {
      const io = collect();
      const pending = runInOwner(dataDir, ['seed'], io);
      await new Promise((resolve) => setTimeout(resolve, 50));
      owner.serve(async (argv, commandIo) => {
        commandIo.out(argv.join(' '));
        return 0;
      });
      expect(await pending).toBe(0);
      expect(io.lines).toEqual(['out:seed']);
    } finally {
      await owner.release();
    }
  });

  it('refuses a command without the owner token, and one after it stopped serving', async () => {
    const owner = await claimDataDir(dataDir);
    let ran = 0;
    owner.serve(async () => {
      ran++;
      return 0;
    });
    try {
      const token = await readFile(join(dataDir, 'owner.token'), 'utf8');
      await writeFile(join(dataDir, 'owner.token'), 'forged', { mode: 0o600 });
      const forged = collect();
      expect(await runInOwner(dataDir, ['seed'], forged)).toBe(1);
      expect(forged.lines.join('\n')).toMatch(/owner token/);
      await writeFile(join(dataDir, 'owner.token'), token, { mode: 0o600 });

      await owner.stopServing();
      const late = collect();
      expect(await runInOwner(dataDir, ['seed'], late)).toBe(1);
      expect(late.lines.join('\n')).toMatch(/shutting down/);
      expect(ran).toBe(0);
    } finally {
      await owner.release();
    }
  });

  it('answers garbage on its socket without running anything', async () => {
    const owner = await claimDataDir(dataDir);
    let ran = 0;
    owner.serve(async () => {
      ran++;
      return 0;
    });
    try {
      const token = await readFile(join(dataDir, 'owner.token'), 'utf8');
      for (const request of ['not json\n', '[1,2]\n', `${JSON.stringify({ token, argv: 'seed' })}\n`]) {
        const socket = connect(socketAddress(dataDir));
        socket.write(request);
        let reply = '';
        socket.on('data', (chunk) => (reply += chunk.toString()));
        await once(socket, 'close');
        expect(reply).not.toMatch(/"exit":0/);
      }
      expect(ran).toBe(0);
    } finally {
      await owner.release();
    }
  });

  it('is free the moment its owner dies, even by SIGKILL, and forwards nothing to the dead', async () => {
    const script = `import { claimDataDir } from ${JSON.stringify(join(import.meta.dirname, 'owner.ts'))};
      await claimDataDir(process.argv[1]); process.stdout.write('claimed\\n'); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dataDir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await once(child.stdout, 'data');
    expect(await claimDataDir(dataDir).catch((e: unknown) => e)).toBeInstanceOf(DataDirInUseError);
    child.kill('SIGKILL');
    await once(child, 'exit');
    // The token file is still there, but nobody answers: nothing is forwarded and the directory is claimable.
    expect(await runInOwner(dataDir, ['seed'], collect())).toBeNull();
    const owner = await claimDataDir(dataDir);
    await owner.release();
  }, 30_000);
});
