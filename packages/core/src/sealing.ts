import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Keys that seal secrets kept at rest (AES-256-GCM): the current one seals, every one listed still opens, so a key is
 * rotated by putting a new one first and re-sealing (see each secret's owner) before the old one is dropped.
 */
export interface SealingKeys {
  current: string;
  keys: ReadonlyMap<string, Buffer>;
}

/** Keys from `id:base64,id:base64` (the first is current; each key 32 bytes). `name` is the setting, for errors. */
export function parseSealingKeys(spec: string, name: string): SealingKeys {
  const entries = spec.split(',').map((part) => {
    const [id, b64] = part.trim().split(':');
    const key = Buffer.from(b64 ?? '', 'base64');
    if (!id || !/^[A-Za-z0-9_-]+$/.test(id) || key.length !== 32) {
      throw new Error(`${name}: each key is <id>:<32 bytes in base64>, the ids letters, digits, - or _`);
    }
    return [id, key] as const;
  });
  return { current: entries[0]?.[0] as string, keys: new Map(entries) };
}

/** iv (12 bytes) | tag (16) | ciphertext, under `key`, bound to `context` (additional data) when given. */
export function sealBytes(key: Buffer, plaintext: string, context?: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (context !== undefined) cipher.setAAD(Buffer.from(context, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The plaintext of `sealBytes`; throws when the key, the context or a single byte differs. */
export function openBytes(key: Buffer, sealed: Buffer, context?: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
  if (context !== undefined) decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
}

const SEALED = /^sealed:v1:([A-Za-z0-9_-]+):([A-Za-z0-9+/=]+)$/;

/** One text column holding a sealed secret: `sealed:v1:<key id>:<base64>`, bound to `context` (e.g. the row). */
export function sealText(keys: SealingKeys, plaintext: string, context: string): string {
  const key = keys.keys.get(keys.current) as Buffer;
  return `sealed:v1:${keys.current}:${sealBytes(key, plaintext, context).toString('base64')}`;
}

/** The key id a `sealText` value was sealed with, or null when the text is not sealed. */
export function sealedKeyId(value: string): string | null {
  return SEALED.exec(value)?.[1] ?? null;
}

/** Opens a `sealText` value; throws (fails closed) on an unknown key, another context, or any tampering. */
export function openText(keys: SealingKeys, value: string, context: string): string {
  const m = SEALED.exec(value);
  if (!m) throw new Error('not a sealed value');
  const key = keys.keys.get(m[1] as string);
  if (!key) throw new Error(`sealing key ${m[1]} is not configured`);
  return openBytes(key, Buffer.from(m[2] as string, 'base64'), context);
}
