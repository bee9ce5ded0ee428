import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseSealingKeys, type SealingKeys } from '@firm/core';

/**
 * The keys of the agent audit chain's HMACs, in the form of the other keys (`id:<32 bytes base64>[,...]`): the first
 * signs, every one listed still verifies, and each event stores the id of the key it was signed with, so a key is
 * rotated by putting a new one first and keeping the old one listed for as long as its events are to be verified.
 */
export type AuditKeys = SealingKeys;

export const AUDIT_KEYS_SETTING = 'AUDIT_HMAC_KEYS';

export const parseAuditKeys = (spec: string): AuditKeys => parseSealingKeys(spec, AUDIT_KEYS_SETTING);

/** Where a key made for local development is kept, under the data directory (never in the database). */
export const LOCAL_AUDIT_KEYS_FILE = 'audit-hmac-keys';

/**
 * The keys kept in `<dataDir>/audit-hmac-keys`, made the first time they are needed: what a development setup without
 * AUDIT_HMAC_KEYS uses. The key is random, not a published development value, so even a local chain cannot be
 * recomputed by someone who only reaches the database; its id is random too, so a chain signed elsewhere under
 * another such key says "key not configured" rather than "altered". Processes starting together agree on one key:
 * the file appears whole and only once (written aside, then linked into place).
 */
export async function localAuditKeys(dataDir: string): Promise<AuditKeys> {
  const file = join(dataDir, LOCAL_AUDIT_KEYS_FILE);
  try {
    return parseAuditKeys((await readFile(file, 'utf8')).trim());
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw describeKeyFile(file, err);
  }
  await mkdir(dataDir, { recursive: true });
  const spec = `local-${randomBytes(4).toString('hex')}:${randomBytes(32).toString('base64')}`;
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(aside, `${spec}\n`, { mode: 0o600 });
  try {
    await link(aside, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(aside);
  }
  try {
    return parseAuditKeys((await readFile(file, 'utf8')).trim());
  } catch (err) {
    throw describeKeyFile(file, err);
  }
}

const describeKeyFile = (file: string, err: unknown) =>
  new Error(`${AUDIT_KEYS_SETTING}: cannot use the local audit key in ${file}: ${(err as Error).message}`);

/** HMAC-SHA256 of `message` under the key `keyId`, hex; undefined when that key is not configured. */
export function hmacOf(keys: AuditKeys, keyId: string, message: string): string | undefined {
  const key = keys.keys.get(keyId);
  return key && createHmac('sha256', key).update(message, 'utf8').digest('hex');
}

/** Compares two hex digests in constant time. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
