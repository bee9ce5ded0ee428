import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { S3BlobStore } from './store';

export { receiptPdf } from './sample';

/** A local S3-compatible server (s3rver) on a random port, with one bucket, its files in a temporary folder. */
export async function startS3Server(bucket = 'attachments') {
  const directory = mkdtempSync(join(tmpdir(), 's3rver-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  const config = {
    ATTACHMENTS_S3_BUCKET: bucket,
    ATTACHMENTS_S3_ENDPOINT: endpoint,
    ATTACHMENTS_S3_REGION: 'us-east-1',
    ATTACHMENTS_S3_ACCESS_KEY_ID: 'S3RVER',
    ATTACHMENTS_S3_SECRET_ACCESS_KEY: 'S3RVER',
    ATTACHMENTS_S3_FORCE_PATH_STYLE: true,
  };
  return {
    endpoint,
    bucket,
    directory,
    config,
    store: () =>
      new S3BlobStore({
        bucket,
        endpoint,
        region: 'us-east-1',
        accessKeyId: 'S3RVER',
        secretAccessKey: 'S3RVER',
        forcePathStyle: true,
      }),
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** The first bytes of a Windows executable (MZ, PE header), the kind of file that must never pass as a PDF. */
export function executableBytes(size = 4096): Buffer {
  const b = Buffer.alloc(size);
  b.write('MZ', 0, 'latin1');
  b.writeUInt32LE(0x80, 0x3c);
  b.write('PE\0\0', 0x80, 'latin1');
  return b;
}

/** A multipart/form-data body: the fields, then the file. */
export function multipart(
  fields: Record<string, string>,
  file: { filename: string; type?: string; data: Buffer } | null,
): { payload: Buffer; headers: { 'content-type': string } } {
  const boundary = `----form${randomUUID().replaceAll('-', '')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  if (file) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.filename}"\r\n` +
          `Content-Type: ${file.type ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      file.data,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}
