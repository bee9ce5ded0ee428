import { DEVELOPMENT_TOKEN_KEYS, parseTokenKeys, type TokenKeys } from './secrets';

/**
 * The sandbox aggregator this project ships (`npm run sandbox:aggregator`): its address and the credentials it accepts
 * unless told otherwise. Outside production they are the defaults, so `npm start` has a bank with nothing configured.
 */
export const SANDBOX_PLAID = {
  clientId: 'sandbox-client-id',
  secret: 'sandbox-secret',
  basePath: 'http://127.0.0.1:4010',
} as const;

/** Plaid's own sandbox: real Plaid, fake banks. */
const PLAID_SANDBOX_HOST = 'sandbox.plaid.com';

export const BANK_FEEDS_MODES = ['on', 'sandbox', 'off'] as const;
export type BankFeedsMode = (typeof BANK_FEEDS_MODES)[number];

export interface BankFeedsEnvironment {
  BANK_FEEDS?: string | undefined;
  PLAID_CLIENT_ID?: string | undefined;
  PLAID_SECRET?: string | undefined;
  PLAID_BASE_URL?: string | undefined;
  BANK_TOKEN_KEYS?: string | undefined;
}

/** How this deployment reaches its aggregator, and the keys that seal the access tokens it hands out. */
export interface BankFeedsConfig {
  clientId: string;
  secret: string;
  basePath: string;
  tokenKeys: TokenKeys;
}

/** True when the URL is the local sandbox aggregator's default address or Plaid's sandbox. */
export function isSandboxBaseUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.origin === new URL(SANDBOX_PLAID.basePath).origin || u.hostname === PLAID_SANDBOX_HOST;
  } catch {
    return false;
  }
}

/**
 * Bank feeds from the environment, or null when BANK_FEEDS=off. With BANK_FEEDS=on (the default) in production, the
 * aggregator's address and credentials must be given and must not be a sandbox's, and BANK_TOKEN_KEYS must be set:
 * a production server never talks to a sandbox, nor seals tokens under the public development key, because a setting
 * was forgotten. BANK_FEEDS=sandbox says a sandbox is meant (a demonstration deployment); BANK_FEEDS=off turns feeds
 * off. Outside production the sandbox aggregator's values are the defaults. Throws naming the variable at fault.
 */
export function bankFeedsConfigFrom(
  env: BankFeedsEnvironment,
  options: { production?: boolean } = {},
): BankFeedsConfig | null {
  const mode = env.BANK_FEEDS || 'on';
  if (!(BANK_FEEDS_MODES as readonly string[]).includes(mode)) {
    throw new Error(`invalid configuration: BANK_FEEDS: one of ${BANK_FEEDS_MODES.join(', ')}`);
  }
  if (mode === 'off') return null;
  const unless = 'or set BANK_FEEDS=sandbox to use a sandbox, BANK_FEEDS=off to turn bank feeds off';
  if (options.production && mode === 'on') {
    const settings = [
      ['PLAID_CLIENT_ID', env.PLAID_CLIENT_ID, (v: string) => v === SANDBOX_PLAID.clientId],
      ['PLAID_SECRET', env.PLAID_SECRET, (v: string) => v === SANDBOX_PLAID.secret],
      ['PLAID_BASE_URL', env.PLAID_BASE_URL, isSandboxBaseUrl],
    ] as const;
    for (const [name, value, isSandbox] of settings) {
      if (!value) {
        throw new Error(`invalid configuration: ${name}: required when NODE_ENV=production (${unless})`);
      }
      if (isSandbox(value)) {
        throw new Error(
          `invalid configuration: ${name}: a sandbox's value, refused when NODE_ENV=production (${unless})`,
        );
      }
    }
  }
  if (options.production && !env.BANK_TOKEN_KEYS) {
    throw new Error(
      'invalid configuration: BANK_TOKEN_KEYS: required when NODE_ENV=production (k1:<32 random bytes in base64>), ' +
        'or set BANK_FEEDS=off to turn bank feeds off',
    );
  }
  return {
    clientId: env.PLAID_CLIENT_ID || SANDBOX_PLAID.clientId,
    secret: env.PLAID_SECRET || SANDBOX_PLAID.secret,
    basePath: env.PLAID_BASE_URL || SANDBOX_PLAID.basePath,
    tokenKeys: parseTokenKeys(env.BANK_TOKEN_KEYS || DEVELOPMENT_TOKEN_KEYS),
  };
}
