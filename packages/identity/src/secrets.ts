import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 32; // 32 base62 characters: about 190 bits of randomness
const CHECKSUM_LENGTH = 6; // 62^6 > 2^32, so a CRC-32 always fits

function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

function base62Fixed(value: number, length: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < length; i++) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

const checksumOf = (body: string) => base62Fixed(crc32(body), CHECKSUM_LENGTH);

/**
 * Prefixed secrets (`dk_live_…`, `mcp_at_…`): prefix, random body, and a CRC-32 checksum so that a
 * typo or a truncated copy is rejected before any database read.
 */
export function generateSecret(prefix: string): string {
  const body = prefix + randomBase62(SECRET_LENGTH);
  return body + checksumOf(body);
}

/** True when the string has the prefix, the shape and a matching checksum. */
export function isWellFormedSecret(prefix: string, candidate: string): boolean {
  if (candidate.length !== prefix.length + SECRET_LENGTH + CHECKSUM_LENGTH) return false;
  if (!candidate.startsWith(prefix)) return false;
  const rest = candidate.slice(prefix.length);
  for (const ch of rest) if (!BASE62.includes(ch)) return false;
  const body = candidate.slice(0, -CHECKSUM_LENGTH);
  return safeEqual(checksumOf(body), candidate.slice(-CHECKSUM_LENGTH));
}

/** SHA-256 is enough for high-entropy secrets, and lets us find them by an indexed lookup. */
export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

export const displayPrefixOf = (secret: string, prefix: string): string => secret.slice(0, prefix.length + 4);
