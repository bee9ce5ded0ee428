import { parseSealingKeys, type SealingKeys } from '@firm/core';

/**
 * Where and how this deployment reaches QuickBooks Online: the app's OAuth credentials, Intuit's endpoints (defaults
 * by QBO_ENVIRONMENT, each overridable so that any QBO-compatible server can stand in), the pinned minor version, and
 * the keys that seal the tokens at rest.
 */
export interface QboConfig {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  environment: 'sandbox' | 'production';
  authorizeUrl: string;
  tokenUrl: string;
  revokeUrl: string;
  /** The part before `/v3/company/{realmId}`. */
  apiBaseUrl: string;
  keys: SealingKeys;
  /** Per attempt. */
  timeoutMs: number;
  /** Attempts after the first, on 429, 5xx, timeouts and dropped connections. */
  retries: number;
}

/** The one place the API's minor version is pinned: every request carries it. */
export const QBO_MINOR_VERSION = '75';

const DEFAULTS = {
  authorizeUrl: 'https://appcenter.intuit.com/connect/oauth2',
  tokenUrl: 'https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer',
  revokeUrl: 'https://developer.api.intuit.com/v2/oauth2/tokens/revoke',
  sandbox: 'https://sandbox-quickbooks.api.intuit.com',
  production: 'https://quickbooks.api.intuit.com',
};

export interface QboEnvironment {
  QBO_CLIENT_ID?: string | undefined;
  QBO_CLIENT_SECRET?: string | undefined;
  QBO_REDIRECT_URI?: string | undefined;
  QBO_ENVIRONMENT?: string | undefined;
  QBO_AUTHORIZE_URL?: string | undefined;
  QBO_TOKEN_URL?: string | undefined;
  QBO_REVOKE_URL?: string | undefined;
  QBO_API_BASE_URL?: string | undefined;
  QBO_TOKEN_ENCRYPTION_KEY?: string | undefined;
}

/** A fixed key for development and tests only; production refuses to start QBO without QBO_TOKEN_ENCRYPTION_KEY. */
export const DEVELOPMENT_QBO_KEYS = `dev:${Buffer.alloc(32, 11).toString('base64')}`;

/**
 * The configuration from the environment, or null when QBO is not configured (no QBO_CLIENT_ID): clients can then
 * only be on the embedded platform. Throws on a half-made configuration.
 */
export function qboConfigFrom(env: QboEnvironment, options: { production?: boolean } = {}): QboConfig | null {
  if (!env.QBO_CLIENT_ID) return null;
  const missing = (['QBO_CLIENT_SECRET', 'QBO_REDIRECT_URI'] as const).filter((name) => !env[name]);
  if (options.production && !env.QBO_TOKEN_ENCRYPTION_KEY) missing.push('QBO_TOKEN_ENCRYPTION_KEY' as never);
  if (missing.length > 0)
    throw new Error(`invalid configuration: QBO_CLIENT_ID is set, so ${missing.join(', ')} must be`);
  const environment = env.QBO_ENVIRONMENT ?? 'sandbox';
  if (environment !== 'sandbox' && environment !== 'production') {
    throw new Error('invalid configuration: QBO_ENVIRONMENT is sandbox or production');
  }
  return {
    clientId: env.QBO_CLIENT_ID,
    clientSecret: env.QBO_CLIENT_SECRET as string,
    redirectUri: env.QBO_REDIRECT_URI as string,
    environment,
    authorizeUrl: env.QBO_AUTHORIZE_URL ?? DEFAULTS.authorizeUrl,
    tokenUrl: env.QBO_TOKEN_URL ?? DEFAULTS.tokenUrl,
    revokeUrl: env.QBO_REVOKE_URL ?? DEFAULTS.revokeUrl,
    apiBaseUrl: (env.QBO_API_BASE_URL ?? DEFAULTS[environment]).replace(/\/+$/, ''),
    keys: parseSealingKeys(env.QBO_TOKEN_ENCRYPTION_KEY ?? DEVELOPMENT_QBO_KEYS, 'QBO_TOKEN_ENCRYPTION_KEY'),
    timeoutMs: 15_000,
    retries: 3,
  };
}
