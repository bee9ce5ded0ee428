import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  auditTrailOf,
  bankFeedsOf,
  ConfigError,
  databaseOptionsOf,
  loadConfig,
  trustProxyOf,
  webhookSecretKeysOf,
} from './config';

const KEYS = `k1:${Buffer.alloc(32, 1).toString('base64')}`;

describe('loadConfig', () => {
  it('applies defaults and converts numbers and booleans', () => {
    const config = loadConfig({ PORT: '8080', WEBHOOKS_ALLOW_INSECURE_LOCALHOST: 'true' });
    expect(config).toMatchObject({ PORT: 8080, HOST: '127.0.0.1', WEBHOOKS_ALLOW_INSECURE_LOCALHOST: true });
  });

  it('names the variable that is wrong', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
  });

  it('reaches Postgres in session mode unless DATABASE_POOL_MODE says a transaction pooler is in front', () => {
    expect(databaseOptionsOf(loadConfig({ DATABASE_URL: 'postgres://db/books' }))).toMatchObject({
      poolMode: 'session',
      migrationUrl: undefined,
    });
    const pooled = loadConfig({
      DATABASE_URL: 'postgres://pooler:6432/books',
      DATABASE_POOL_MODE: 'transaction',
      DATABASE_MIGRATION_URL: 'postgres://db:5432/books',
    });
    expect(databaseOptionsOf(pooled)).toMatchObject({
      url: 'postgres://pooler:6432/books',
      poolMode: 'transaction',
      migrationUrl: 'postgres://db:5432/books',
    });
  });

  it('refuses a pool mode it does not know, and a migration URL that is not Postgres, naming the variable', () => {
    expect(() => loadConfig({ DATABASE_POOL_MODE: 'statement' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_POOL_MODE: 'statement' })).toThrow(/DATABASE_POOL_MODE/);
    expect(() => loadConfig({ DATABASE_MIGRATION_URL: 'mysql://db/books' })).toThrow(/DATABASE_MIGRATION_URL/);
  });

  it('needs PUBLIC_ORIGIN in production, so discovery documents never come from a Host header', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/PUBLIC_ORIGIN/);
    expect(
      loadConfig({
        NODE_ENV: 'production',
        PUBLIC_ORIGIN: 'https://api.example.com',
        WEBHOOK_SECRET_KEYS: KEYS,
        AUDIT_HMAC_KEYS: KEYS,
        BANK_FEEDS: 'off',
      }).PUBLIC_ORIGIN,
    ).toBe('https://api.example.com');
  });

  it('refuses to start in production with the aggregator at the sandbox, unless BANK_FEEDS says sandbox or off', () => {
    const production = {
      NODE_ENV: 'production',
      PUBLIC_ORIGIN: 'https://api.example.com',
      WEBHOOK_SECRET_KEYS: KEYS,
      AUDIT_HMAC_KEYS: KEYS,
    };
    const plaid = {
      PLAID_CLIENT_ID: '5f0c0a1b2c3d4e5f6a7b8c9d',
      PLAID_SECRET: 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5',
      PLAID_BASE_URL: 'https://production.plaid.com',
      BANK_TOKEN_KEYS: KEYS,
    };
    // Nothing set: the sandbox's defaults are not taken.
    expect(() => loadConfig(production)).toThrow(
      'invalid configuration: PLAID_CLIENT_ID: required when NODE_ENV=production (or set BANK_FEEDS=sandbox to use a ' +
        'sandbox, BANK_FEEDS=off to turn bank feeds off)',
    );
    for (const name of Object.keys(plaid)) {
      expect(() => loadConfig({ ...production, ...plaid, [name]: undefined }), name).toThrow(
        new RegExp(`^invalid configuration: ${name}: required when NODE_ENV=production`),
      );
    }
    // Set, to what the sandbox takes.
    for (const [name, value] of [
      ['PLAID_CLIENT_ID', 'sandbox-client-id'],
      ['PLAID_SECRET', 'sandbox-secret'],
      ['PLAID_BASE_URL', 'http://127.0.0.1:4010'],
      ['PLAID_BASE_URL', 'http://127.0.0.1:4010/'],
      ['PLAID_BASE_URL', 'https://sandbox.plaid.com'],
    ] as const) {
      expect(() => loadConfig({ ...production, ...plaid, [name]: value }), `${name}=${value}`).toThrow(
        `invalid configuration: ${name}: a sandbox's value, refused when NODE_ENV=production`,
      );
    }
    expect(bankFeedsOf(loadConfig({ ...production, ...plaid }))).toMatchObject({
      clientId: plaid.PLAID_CLIENT_ID,
      secret: plaid.PLAID_SECRET,
      basePath: 'https://production.plaid.com',
      tokenKeys: { current: 'k1' },
    });
    // The secret may come from a file, as the other secrets do.
    const dir = mkdtempSync(join(tmpdir(), 'config-plaid-'));
    try {
      writeFileSync(join(dir, 'plaid_secret'), `${plaid.PLAID_SECRET}\n`);
      const fromFile = {
        ...production,
        ...plaid,
        PLAID_SECRET: undefined,
        PLAID_SECRET_FILE: join(dir, 'plaid_secret'),
      };
      expect(bankFeedsOf(loadConfig(fromFile))?.secret).toBe(plaid.PLAID_SECRET);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    // A sandbox on purpose (a demonstration deployment) still needs its own token key in production.
    expect(() => loadConfig({ ...production, BANK_FEEDS: 'sandbox' })).toThrow(
      /^invalid configuration: BANK_TOKEN_KEYS: required when NODE_ENV=production/,
    );
    expect(bankFeedsOf(loadConfig({ ...production, BANK_FEEDS: 'sandbox', BANK_TOKEN_KEYS: KEYS }))).toMatchObject({
      clientId: 'sandbox-client-id',
      basePath: 'http://127.0.0.1:4010',
    });
    // Off: nothing is needed, and nothing is built.
    expect(bankFeedsOf(loadConfig({ ...production, BANK_FEEDS: 'off' }))).toBeNull();
    expect(() => loadConfig({ BANK_FEEDS: 'maybe' })).toThrow(/BANK_FEEDS/);

    // Outside production the sandbox aggregator is the default, as `npm start` uses it.
    expect(bankFeedsOf(loadConfig({}))).toMatchObject({
      clientId: 'sandbox-client-id',
      secret: 'sandbox-secret',
      basePath: 'http://127.0.0.1:4010',
      tokenKeys: { current: 'dev' },
    });
  });

  it('needs WEBHOOK_SECRET_KEYS in production, so signing secrets are never sealed under the public development key', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', PUBLIC_ORIGIN: 'https://api.example.com' })).toThrow(
      /WEBHOOK_SECRET_KEYS: required/,
    );
    expect(() => loadConfig({ WEBHOOK_SECRET_KEYS: 'k1:short' })).toThrow(/WEBHOOK_SECRET_KEYS/);
    const config = loadConfig({ WEBHOOK_SECRET_KEYS: `k2:${Buffer.alloc(32, 2).toString('base64')},${KEYS}` });
    expect(webhookSecretKeysOf(config).current).toBe('k2');
    expect([...webhookSecretKeysOf(config).keys.keys()]).toEqual(['k2', 'k1']);
  });

  it('needs AUDIT_HMAC_KEYS in production, so no database writer can recompute the agent audit chain', async () => {
    const production = {
      NODE_ENV: 'production',
      PUBLIC_ORIGIN: 'https://api.example.com',
      WEBHOOK_SECRET_KEYS: KEYS,
      BANK_FEEDS: 'off',
    };
    expect(() => loadConfig(production)).toThrow(
      'invalid configuration: AUDIT_HMAC_KEYS: required when NODE_ENV=production (k1:<32 random bytes in base64>)',
    );
    expect(() => loadConfig({ AUDIT_HMAC_KEYS: 'k1:short' })).toThrow(/AUDIT_HMAC_KEYS/);
    const dir = mkdtempSync(join(tmpdir(), 'config-audit-'));
    try {
      const rotated = `k2:${Buffer.alloc(32, 2).toString('base64')},${KEYS}`;
      const trail = await auditTrailOf(loadConfig({ ...production, AUDIT_HMAC_KEYS: rotated, DATA_DIR: dir }));
      expect(trail.keys.current).toBe('k2');
      expect([...trail.keys.keys.keys()]).toEqual(['k2', 'k1']);
      expect(trail.anchors.dir).toBe(join(dir, 'audit-anchors'));
      const elsewhere = join(dir, 'anchors');
      expect(
        (await auditTrailOf(loadConfig({ ...production, AUDIT_HMAC_KEYS: KEYS, AUDIT_ANCHOR_DIR: elsewhere }))).anchors
          .dir,
      ).toBe(elsewhere);
      // Outside production, without the setting: a key made once in the data directory, outside the database.
      const local = await auditTrailOf(loadConfig({ DATA_DIR: dir }));
      expect(local.keys.current).toMatch(/^local-/);
      expect(readFileSync(join(dir, 'audit-hmac-keys'), 'utf8')).toMatch(/^local-[0-9a-f]{8}:/);
      expect((await auditTrailOf(loadConfig({ DATA_DIR: dir }))).keys.current).toBe(local.keys.current);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads TRUST_PROXY as off, on, or a list of proxies', () => {
    expect(trustProxyOf(undefined)).toBe(false);
    expect(trustProxyOf('false')).toBe(false);
    expect(trustProxyOf('true')).toBe(true);
    expect(trustProxyOf('10.0.0.1,10.0.0.2')).toBe('10.0.0.1,10.0.0.2');
  });

  it('reads a secret from the file named by <NAME>_FILE, and names the variable when it cannot', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-'));
    try {
      const file = join(dir, 'session_secret');
      writeFileSync(file, `${'s'.repeat(40)}\n`);
      expect(loadConfig({ SESSION_SECRET_FILE: file }).SESSION_SECRET).toBe('s'.repeat(40));
      // The variable itself wins over the file.
      expect(loadConfig({ SESSION_SECRET: 't'.repeat(40), SESSION_SECRET_FILE: file }).SESSION_SECRET).toBe(
        't'.repeat(40),
      );
      expect(() => loadConfig({ SESSION_SECRET_FILE: join(dir, 'missing') })).toThrow(
        /SESSION_SECRET_FILE: cannot read .*ENOENT/,
      );
      writeFileSync(file, 'short');
      expect(() => loadConfig({ SESSION_SECRET_FILE: file })).toThrow(/SESSION_SECRET/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
