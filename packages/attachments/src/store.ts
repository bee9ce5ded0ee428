import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { type Db, rowsOf } from '@firm/db';
import type { AttachmentStoreKind } from '@firm/db';
import { sql } from 'drizzle-orm';

/**
 * Where a company's files live. Every call names the company and the blob; `put` reads the bytes as they arrive and
 * keeps at most a chunk or an upload part of them in memory.
 */
export interface BlobStore {
  readonly kind: AttachmentStoreKind;
  /** Stores the bytes of `body` under the blob; fails (leaving nothing readable) when `body` fails. */
  put(organizationId: string, blobId: string, body: Readable): Promise<void>;
  /** The blob's bytes, read as they are sent. */
  open(organizationId: string, blobId: string): Promise<Readable>;
  /** Removes the blob's bytes; removing what is not there is no error. */
  remove(organizationId: string, blobId: string): Promise<void>;
  /** Lets go of connections the store holds. */
  close?(): void;
}

/** Bytes per row of attachment_chunks. */
export const CHUNK_BYTES = 256 * 1024;
/** Rows read per query while a file is sent. */
const CHUNKS_PER_READ = 4;

/** Files in Postgres: a blob's bytes are rows of attachment_chunks, written one chunk at a time as they arrive. */
export class PostgresBlobStore implements BlobStore {
  readonly kind = 'postgres' as const;
  constructor(private readonly db: Db) {}

  async put(organizationId: string, blobId: string, body: Readable): Promise<void> {
    let seq = 0;
    let parts: Buffer[] = [];
    let held = 0;
    const write = async (data: Buffer) => {
      await this.db.execute(sql`insert into attachment_chunks (organization_id, blob_id, seq, data)
        values (${organizationId}, ${blobId}, ${seq++}, ${data})`);
    };
    for await (const chunk of body as AsyncIterable<Buffer>) {
      parts.push(chunk);
      held += chunk.length;
      while (held >= CHUNK_BYTES) {
        const all = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
        await write(all.subarray(0, CHUNK_BYTES));
        const rest = all.subarray(CHUNK_BYTES);
        parts = rest.length > 0 ? [rest] : [];
        held = rest.length;
      }
    }
    if (held > 0 || seq === 0) await write(Buffer.concat(parts));
  }

  async open(organizationId: string, blobId: string): Promise<Readable> {
    const db = this.db;
    async function* chunks() {
      for (let seq = 0; ; seq += CHUNKS_PER_READ) {
        const rows = rowsOf<{ data: Uint8Array }>(
          await db.execute(sql`select data from attachment_chunks
            where organization_id = ${organizationId} and blob_id = ${blobId}
              and seq >= ${seq} and seq < ${seq + CHUNKS_PER_READ}
            order by seq`),
        );
        for (const row of rows) yield Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength);
        if (rows.length < CHUNKS_PER_READ) return;
      }
    }
    return Readable.from(chunks(), { objectMode: false });
  }

  async remove(organizationId: string, blobId: string): Promise<void> {
    await this.db.execute(
      sql`delete from attachment_chunks where organization_id = ${organizationId} and blob_id = ${blobId}`,
    );
  }
}

export interface S3StoreOptions {
  bucket: string;
  /** An S3-compatible server's URL; unset: AWS's endpoint of the region. */
  endpoint?: string | undefined;
  region: string;
  accessKeyId?: string | undefined;
  secretAccessKey?: string | undefined;
  /** Path-style URLs (bucket in the path), as most S3-compatible servers want. */
  forcePathStyle?: boolean | undefined;
  /** Prefix of every object key, e.g. `attachments/`. */
  prefix?: string | undefined;
}

/** Upload parts: S3's smallest, so that an upload holds at most two of them in memory. */
const PART_BYTES = 5 * 1024 * 1024;

/** The AWS SDK, loaded the first time an S3 store is used: a server keeping files in Postgres never holds it. */
const awsSdk = () =>
  Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]).then(([s3, storage]) => ({
    ...s3,
    Upload: storage.Upload,
  }));
type AwsSdk = Awaited<ReturnType<typeof awsSdk>>;

/**
 * Files in S3-compatible object storage, one object per blob under `<prefix><organization>/<blob>`, encrypted at rest
 * by the server (SSE AES256), sent as a multipart upload as the bytes arrive.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  private sdk: Promise<{ aws: AwsSdk; client: S3Client }> | undefined;
  private client: S3Client | undefined;
  constructor(private readonly options: S3StoreOptions) {}

  /** The SDK and this store's client, made on first use. */
  private connected(): Promise<{ aws: AwsSdk; client: S3Client }> {
    const options = this.options;
    this.sdk ??= awsSdk().then((aws) => {
      this.client = new aws.S3Client({
        region: options.region,
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        forcePathStyle: options.forcePathStyle ?? Boolean(options.endpoint),
        ...(options.accessKeyId && options.secretAccessKey
          ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } }
          : {}),
      });
      return { aws, client: this.client };
    });
    return this.sdk;
  }

  keyOf(organizationId: string, blobId: string): string {
    return `${this.options.prefix ?? ''}${organizationId}/${blobId}`;
  }

  async put(organizationId: string, blobId: string, body: Readable): Promise<void> {
    // A body that fails while the SDK loads (too large, cut off) fails the put before any byte is sent.
    let failed: unknown;
    const early = (error: unknown) => void (failed ??= error);
    body.once('error', early);
    const { aws, client } = await this.connected().finally(() => body.off('error', early));
    if (failed !== undefined || body.destroyed) throw failed ?? new Error('upload body closed before it was stored');
    const upload = new aws.Upload({
      client,
      params: {
        Bucket: this.options.bucket,
        Key: this.keyOf(organizationId, blobId),
        Body: body,
        ServerSideEncryption: 'AES256',
        ContentType: 'application/octet-stream',
      },
      partSize: PART_BYTES,
      queueSize: 2,
      leavePartsOnError: false,
    });
    // The body's failure (too large, cut off) must stop the upload, not leave it waiting for bytes.
    const stop = () => void upload.abort().catch(() => undefined);
    body.once('error', stop);
    try {
      await upload.done();
    } finally {
      body.off('error', stop);
    }
  }

  async open(organizationId: string, blobId: string): Promise<Readable> {
    const { aws, client } = await this.connected();
    const got = await client.send(
      new aws.GetObjectCommand({ Bucket: this.options.bucket, Key: this.keyOf(organizationId, blobId) }),
    );
    return got.Body as Readable;
  }

  async remove(organizationId: string, blobId: string): Promise<void> {
    const { aws, client } = await this.connected();
    await client.send(
      new aws.DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.keyOf(organizationId, blobId) }),
    );
  }

  close(): void {
    this.client?.destroy();
  }
}

/** The stores a service reads from (each blob names its own) and the one new files go to. */
export interface AttachmentStores {
  current: BlobStore;
  byKind: Partial<Record<AttachmentStoreKind, BlobStore>>;
}

export function storeOf(stores: AttachmentStores, kind: AttachmentStoreKind): BlobStore {
  const store = stores.byKind[kind];
  if (!store) throw new Error(`attachment store ${kind} is not configured (ATTACHMENTS_STORE, ATTACHMENTS_S3_*)`);
  return store;
}

export interface AttachmentStoreConfig {
  ATTACHMENTS_STORE: AttachmentStoreKind;
  ATTACHMENTS_S3_BUCKET?: string | undefined;
  ATTACHMENTS_S3_ENDPOINT?: string | undefined;
  ATTACHMENTS_S3_REGION?: string | undefined;
  ATTACHMENTS_S3_ACCESS_KEY_ID?: string | undefined;
  ATTACHMENTS_S3_SECRET_ACCESS_KEY?: string | undefined;
  ATTACHMENTS_S3_FORCE_PATH_STYLE?: boolean | undefined;
  ATTACHMENTS_S3_PREFIX?: string | undefined;
}

/** The S3 store the configuration describes, or null when it names no bucket. */
export function s3StoreFrom(config: AttachmentStoreConfig): S3BlobStore | null {
  if (!config.ATTACHMENTS_S3_BUCKET) return null;
  return new S3BlobStore({
    bucket: config.ATTACHMENTS_S3_BUCKET,
    endpoint: config.ATTACHMENTS_S3_ENDPOINT,
    region: config.ATTACHMENTS_S3_REGION ?? 'us-east-1',
    accessKeyId: config.ATTACHMENTS_S3_ACCESS_KEY_ID,
    secretAccessKey: config.ATTACHMENTS_S3_SECRET_ACCESS_KEY,
    forcePathStyle: config.ATTACHMENTS_S3_FORCE_PATH_STYLE,
    prefix: config.ATTACHMENTS_S3_PREFIX,
  });
}

/** The Postgres store always (files already there stay readable), S3 when configured; new files go to the chosen one. */
export function attachmentStoresFrom(db: Db, config: AttachmentStoreConfig): AttachmentStores {
  const postgres = new PostgresBlobStore(db);
  const s3 = s3StoreFrom(config);
  if (config.ATTACHMENTS_STORE === 's3' && !s3) {
    throw new Error('ATTACHMENTS_STORE=s3 needs ATTACHMENTS_S3_BUCKET (and ATTACHMENTS_S3_REGION, credentials)');
  }
  const byKind: AttachmentStores['byKind'] = { postgres, ...(s3 ? { s3 } : {}) };
  return { current: config.ATTACHMENTS_STORE === 's3' ? (s3 as S3BlobStore) : postgres, byKind };
}
