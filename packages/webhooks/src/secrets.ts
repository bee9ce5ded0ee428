import { openText, parseSealingKeys, type SealingKeys, sealedKeyId, sealText } from '@firm/core';
import { type Db, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';

/**
 * Signing secrets at rest. Signing an HMAC needs the secret itself, so it cannot be hashed like a credential: it is
 * sealed (AES-256-GCM) under WEBHOOK_SECRET_KEYS and bound to its subscription, so a value copied onto another row
 * does not open. Values written before sealing existed (`whsec_…` in clear) are still read, and sealed by
 * `resealSigningSecrets` at the next start.
 */
export type SecretKeys = SealingKeys;

export const parseSecretKeys = (spec: string): SecretKeys => parseSealingKeys(spec, 'WEBHOOK_SECRET_KEYS');

/** The keys used outside production when none are configured: a fixed, public value, never a secret. */
export const DEVELOPMENT_SECRET_KEYS = `dev:${Buffer.alloc(32, 11).toString('base64')}`;

const contextOf = (subscriptionId: string) => `webhook_subscriptions.secret:${subscriptionId}`;

export const sealSigningSecret = (keys: SecretKeys, subscriptionId: string, secret: string): string =>
  sealText(keys, secret, contextOf(subscriptionId));

/** The secret in clear; throws (fails closed) when the stored value was altered or its key is not configured. */
export function openSigningSecret(keys: SecretKeys, subscriptionId: string, stored: string): string {
  if (stored.startsWith('whsec_')) return stored;
  return openText(keys, stored, contextOf(subscriptionId));
}

/**
 * Seals under the current key every secret that is in clear or sealed under another key (after a key is put first
 * in WEBHOOK_SECRET_KEYS), a batch at a time, each row under its lock. A value that does not open (altered, or its
 * key dropped) is left as it is and counted: its deliveries fail until the subscription's secret is rotated.
 */
export async function resealSigningSecrets(
  db: Db,
  keys: SecretKeys,
  batchSize = 500,
): Promise<{ resealed: number; unreadable: number }> {
  const current = `sealed:v1:${keys.current}:%`;
  const result = { resealed: 0, unreadable: 0 };
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const rows = await db.transaction(async (tx) => {
      const batch = rowsOf<{ id: string; secret: string; previous_secret: string | null }>(
        await tx.execute(sql`
          select id, secret, previous_secret from webhook_subscriptions
          where id > ${after}::uuid and (secret not like ${current} or previous_secret not like ${current})
          order by id limit ${batchSize} for update`),
      );
      for (const row of batch) {
        const reseal = (stored: string) =>
          sealedKeyId(stored) === keys.current
            ? stored
            : sealSigningSecret(keys, row.id, openSigningSecret(keys, row.id, stored));
        let secret: string;
        let previous: string | null;
        try {
          secret = reseal(row.secret);
          previous = row.previous_secret === null ? null : reseal(row.previous_secret);
        } catch {
          result.unreadable++;
          continue;
        }
        await tx.execute(sql`
          update webhook_subscriptions set secret = ${secret}, previous_secret = ${previous}
          where id = ${row.id}::uuid`);
        result.resealed++;
      }
      return batch;
    });
    if (rows.length < batchSize) return result;
    after = (rows[rows.length - 1] as { id: string }).id;
  }
}
