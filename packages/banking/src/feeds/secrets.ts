import { openBytes, parseSealingKeys, type SealingKeys, sealBytes } from '@firm/core';

/**
 * Aggregator access tokens at rest: AES-256-GCM under a key from configuration, with the key's id stored beside the
 * value so keys can rotate, and bound to their row (the connection's organization and id are the additional data), so
 * a value copied into another connection's row does not open there. A value that does not decrypt (wrong key, another
 * row, tampered) fails closed.
 */
export type TokenKeys = SealingKeys;

/** Keys from `id:base64,id:base64` (the first is current). */
export const parseTokenKeys = (spec: string): TokenKeys => parseSealingKeys(spec, 'BANK_TOKEN_KEYS');

/** What a connection's access token is bound to: its row. */
export const tokenContext = (organizationId: string, connectionId: string): string =>
  `bank_feed_connections.access_token:${organizationId}:${connectionId}`;

/** Seals under the current key, bound to `context` (tokenContext); without one, as tokens were sealed before binding. */
export function sealToken(keys: TokenKeys, plaintext: string, context?: string): { value: string; keyId: string } {
  const key = keys.keys.get(keys.current) as Buffer;
  return { value: sealBytes(key, plaintext, context).toString('base64'), keyId: keys.current };
}

/** A key id the stored value names that BANK_TOKEN_KEYS does not list. */
export class TokenKeyMissing extends Error {}

/** Opens a sealed token; throws when the key is not configured, or the context or a byte differs. */
export function openToken(keys: TokenKeys, value: string, keyId: string, context?: string): string {
  const key = keys.keys.get(keyId);
  if (!key) throw new TokenKeyMissing(`bank token key ${keyId} is not configured`);
  return openBytes(key, Buffer.from(value, 'base64'), context);
}

/** The key used outside production when none is configured: a fixed, public value, never a secret. */
export const DEVELOPMENT_TOKEN_KEYS = `dev:${Buffer.alloc(32, 7).toString('base64')}`;
