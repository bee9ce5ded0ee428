/**
 * Attachments: a 10 MB PDF uploaded (multipart, POST /api/v1/attachments) and downloaded (GET .../content) on the
 * compiled server, on the Postgres store and on the S3 store (s3rver, started in this process), in MB/s beside a
 * baseline measured in the same run: writing the same bytes to a file on disk (with fsync) and reading them back.
 * Then the server's peak RSS (sampled from /proc every 20 ms) while ten uploads of a 25 MB file run at once, on each
 * store, against its RSS just before: a streamed upload keeps it flat whatever the file's size. Median of
 * BENCH_ATTACHMENT_RUNS (5). Needs DATABASE_URL (a Postgres server; a fresh database is created beside it and dropped
 * after).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { multipart, receiptPdf, startS3Server } from '@firm/attachments/testing';
import { seedDemo } from '@firm/demo';
import { benchOnFreshDatabase, median } from './fresh-database';
import { startCompiledServer } from './server';

const RUNS = Number(process.env.BENCH_ATTACHMENT_RUNS ?? 5);
const MB = 1024 * 1024;
const SIZE = 10 * MB;
/** Just under ATTACHMENTS_MAX_BYTES (25 MB), which counts the file alone. */
const BIG = 25 * MB - 4096;
const CONCURRENT = 10;

const rate = (bytes: number, ms: number) => bytes / MB / (ms / 1000);
const fmt = (n: number) => `${n.toFixed(1)} MB/s`;

/** Sends a body with node:http and resolves with the status and the answer. */
function post(url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const rssOf = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
};

benchOnFreshDatabase('attachments', 4, async (database, url) => {
  const demo = await seedDemo(database.db);
  const orgId = demo.organizations[0]?.id as string;
  const auth = { authorization: `Bearer ${demo.apiKey}`, 'x-organization-id': orgId };
  const s3 = await startS3Server();
  const dir = await mkdtemp(join(tmpdir(), 'bench-attachments-'));
  try {
    const pdf = await receiptPdf('Bench receipt', SIZE);
    const big = await receiptPdf('Bench statement', BIG);

    // The disk baseline: the same bytes written (and fsynced) to a file, and read back.
    const diskWrite: number[] = [];
    const diskRead: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const path = join(dir, `disk-${i}.pdf`);
      let t0 = performance.now();
      const file = await open(path, 'w');
      await file.writeFile(pdf);
      await file.sync();
      await file.close();
      diskWrite.push(performance.now() - t0);
      t0 = performance.now();
      await readFile(path);
      diskRead.push(performance.now() - t0);
    }
    const diskUp = rate(SIZE, median(diskWrite));
    const diskDown = rate(SIZE, median(diskRead));
    console.log(`disk baseline (10 MB): write+fsync ${fmt(diskUp)}, read ${fmt(diskDown)}`);

    for (const store of ['postgres', 's3'] as const) {
      const server = await startCompiledServer(url, {
        WEBHOOK_WORKER: 'false',
        ATTACHMENTS_STORE: store,
        ...(store === 's3' ? Object.fromEntries(Object.entries(s3.config).map(([k, v]) => [k, String(v)])) : {}),
      });
      try {
        const up: number[] = [];
        const down: number[] = [];
        for (let i = 0; i < RUNS; i++) {
          // Distinct bytes each run, so every upload is stored (not found to be a duplicate).
          const bytes = Buffer.concat([pdf, Buffer.from(`%${randomUUID()}\n`)]);
          const form = multipart({}, { filename: `receipt-${i}.pdf`, data: bytes });
          let t0 = performance.now();
          const res = await post(`${server.base}/api/v1/attachments`, { ...auth, ...form.headers }, form.payload);
          up.push(performance.now() - t0);
          if (res.status !== 201) throw new Error(`upload: ${res.status} ${res.text.slice(0, 300)}`);
          const id = (JSON.parse(res.text) as { data: { id: string } }).data.id;
          t0 = performance.now();
          const got = await fetch(`${server.base}/api/v1/attachments/${id}/content`, { headers: auth });
          const body = Buffer.from(await got.arrayBuffer());
          down.push(performance.now() - t0);
          if (!body.equals(bytes)) throw new Error('download: not the bytes uploaded');
        }
        const upRate = rate(SIZE, median(up));
        const downRate = rate(SIZE, median(down));
        console.log(
          `${store} store, 10 MB PDF: upload ${fmt(upRate)} (${(upRate / diskUp).toFixed(2)}x disk write), ` +
            `download ${fmt(downRate)} (${(downRate / diskDown).toFixed(2)}x disk read)`,
        );

        const pid = server.child.pid as number;
        const before = rssOf(pid);
        let peak = before;
        const sampler = setInterval(() => {
          peak = Math.max(peak, rssOf(pid));
        }, 20);
        const t0 = performance.now();
        const answers = await Promise.all(
          Array.from({ length: CONCURRENT }, (_, i) => {
            const form = multipart(
              {},
              { filename: `statement-${i}.pdf`, data: Buffer.concat([big, Buffer.from(`%${randomUUID()}\n`)]) },
            );
            return post(`${server.base}/api/v1/attachments`, { ...auth, ...form.headers }, form.payload);
          }),
        );
        clearInterval(sampler);
        const elapsed = performance.now() - t0;
        const failed = answers.filter((a) => a.status !== 201);
        if (failed.length > 0) throw new Error(`concurrent uploads: ${failed.map((f) => f.status).join(', ')}`);
        console.log(
          `${store} store, ${CONCURRENT} x 25 MB uploads at once: ${(elapsed / 1000).toFixed(1)} s, server RSS ` +
            `${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB (+${(peak - before).toFixed(0)} MB for ` +
            `${((CONCURRENT * BIG) / MB).toFixed(0)} MB in flight)`,
        );
      } finally {
        await server.stop();
      }
    }
  } finally {
    await s3.close();
    await rm(dir, { recursive: true, force: true });
  }
});
