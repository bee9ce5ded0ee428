import { openBytes, parseSealingKeys, type SealingKeys, sealBytes } from '@firm/core';

/**
 * Aggregator access tokens at rest: AES-256-GCM under a key from configuration, with the key's id stored beside the
 * value so keys can rotate. A value that does not decrypt (wrong key, tampered) fails closed.
 */
export type TokenKeys = SealingKeys;

/** Keys from `id:base64,id:base64` (the first is current). */
export const parseTokenKeys = (spec: string): TokenKeys => parseSealingKeys(spec, 'BANK_TOKEN_KEYS');

export function sealToken(keys: TokenKeys, plaintext: string): { value: string; keyId: string } {
  const key = keys.keys.get(keys.current) as Buffer;
  return { value: sealBytes(key, plaintext).toString('base64'), keyId: keys.current };
}

export function openToken(keys: TokenKeys, value: string, keyId: string): string {
  const key = keys.keys.get(keyId);
  if (!key) throw new Error(`bank token key ${keyId} is not configured`);
  return openBytes(key, Buffer.from(value, 'base64'));
}

/** The key used outside production when none is configured: a fixed, public value, never a secret. */
export const DEVELOPMENT_TOKEN_KEYS = `dev:${Buffer.alloc(32, 7).toString('base64')}`;
