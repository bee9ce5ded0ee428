import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';

/** Every environment variable the service reads, validated once at start-up. */
const ConfigSchema = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: Type.String({ default: './.data', minLength: 1 }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  NODE_ENV: Type.Enum(['development', 'production', 'test'], { default: 'development' }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  /** Public origin used in the OpenAPI document and OAuth metadata, e.g. https://books.example.com. */
  PUBLIC_ORIGIN: Type.Optional(Type.String({ pattern: '^https?://[^/]+$' })),
  /** Largest accepted request body, in bytes. */
  BODY_LIMIT_BYTES: Type.Integer({ default: 1_048_576, minimum: 1024 }),
  /** How long idempotency records are kept, in hours. */
  IDEMPOTENCY_RETENTION_HOURS: Type.Integer({ default: 24, minimum: 1 }),
  DB_POOL_MAX: Type.Integer({ default: 20, minimum: 1, maximum: 500 }),
});

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(ConfigSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const withDefaults = Value.Default(ConfigSchema, raw);
  const converted = Value.Convert(ConfigSchema, withDefaults);
  if (!Value.Check(ConfigSchema, converted)) {
    const problems = [...Value.Errors(ConfigSchema, converted)].map((e) => {
      const name =
        e.instancePath.replace(/^\//, '') ||
        String((e.params as { requiredProperties?: string[] }).requiredProperties ?? '');
      return `${name}: ${e.message}`;
    });
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return converted as Config;
}

/** Defaults for tests and embedding: everything a real start-up would have, without the environment. */
export const testConfig = (overrides: Partial<Config> = {}): Config => ({
  ...loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }),
  ...overrides,
});
