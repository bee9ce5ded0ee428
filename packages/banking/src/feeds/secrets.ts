import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Aggregator access tokens at rest: AES-256-GCM under a key from configuration, with the key's id stored beside the
 * value so keys can rotate. A value that does not decrypt (wrong key, tampered) fails closed.
 */
export interface TokenKeys {
  /** The key new values are sealed under. */
  current: string;
  keys: ReadonlyMap<string, Buffer>;
}

/** Keys from `id:base64,id:base64` (the first is current). */
export function parseTokenKeys(spec: string): TokenKeys {
  const entries = spec.split(',').map((part) => {
    const [id, b64] = part.split(':');
    const key = Buffer.from(b64 ?? '', 'base64');
    if (!id || key.length !== 32) throw new Error('each bank token key is id:<32 bytes in base64>');
    return [id, key] as const;
  });
  return { current: entries[0]?.[0] as string, keys: new Map(entries) };
}

export function sealToken(keys: TokenKeys, plaintext: string): { value: string; keyId: string } {
  const key = keys.keys.get(keys.current) as Buffer;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { value: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64'), keyId: keys.current };
}

export function openToken(keys: TokenKeys, value: string, keyId: string): string {
  const key = keys.keys.get(keyId);
  if (!key) throw new Error(`bank token key ${keyId} is not configured`);
  const raw = Buffer.from(value, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/** The key used outside production when none is configured: a fixed, public value, never a secret. */
export const DEVELOPMENT_TOKEN_KEYS = `dev:${Buffer.alloc(32, 7).toString('base64')}`;
