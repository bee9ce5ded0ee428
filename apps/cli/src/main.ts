import { parseArgs } from 'node:util';
import { isDomainError, isUuid } from '@firm/core';
import { type Database, purgeExpiredIdempotencyKeys } from '@firm/db';
import { seedDemo } from '@firm/demo';
import { verifyAuditChains } from '@firm/gateway';
import { createApiKey, createOAuthClient, revokeApiKey, revokeOAuthClient } from '@firm/identity';

const USAGE = `usage: npm run cli -- <command>

commands:
  migrate                                     apply pending migrations
  seed [--json]                               create the demo firm (idempotent; prints a fresh API key)
  api-key create --firm ID [--org ID ...] [--scope S ...] [--name NAME] [--json]
                                              issue an API key (shown once)
  api-key revoke ID                           revoke an API key
  oauth-client create --name NAME --redirect-uri URI [--redirect-uri URI ...] [--public] [--firm ID] [--json]
                                              register an OAuth client (confidential: its secret is shown once)
  oauth-client revoke CLIENT_ID               revoke an OAuth client and every token it holds
  idempotency purge                           delete idempotency records past their retention window
  audit verify [--firm ID] [--json]           check the agent audit trail's hash chains; names the first bad event

environment: DATABASE_URL (Postgres), else the embedded database under DATA_DIR (default ./.data)`;

class UsageError extends Error {}

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** Runs one CLI command against an open database. Returns the process exit code. */
export async function runCli(argv: string[], database: Database, io: Io): Promise<number> {
  const [command, sub] = argv;
  const print = (json: boolean, value: unknown, human: string) => io.out(json ? JSON.stringify(value) : human);
  try {
    switch (command) {
      case 'migrate': {
        await database.migrate();
        io.out('migrations applied');
        return 0;
      }
      case 'seed': {
        const { values } = parseArgs({ args: argv.slice(1), options: { json: { type: 'boolean' } } });
        await database.migrate();
        const result = await seedDemo(database.db);
        print(
          Boolean(values.json),
          result,
          [
            result.created ? 'seeded the demo firm' : 'the demo firm exists; issued a new API key',
            `firm:     ${result.firmId}`,
            ...result.organizations.map((o) => `company:  ${o.id}  ${o.name}`),
            `owner:    ${result.user.email}${result.user.password ? `  password: ${result.user.password}` : ''}`,
            `API key:  ${result.apiKey}  (shown once)`,
          ].join('\n'),
        );
        return 0;
      }
      case 'api-key': {
        if (sub === 'create') {
          const { values } = parseArgs({
            args: argv.slice(2),
            options: {
              firm: { type: 'string' },
              org: { type: 'string', multiple: true },
              scope: { type: 'string', multiple: true },
              name: { type: 'string' },
              json: { type: 'boolean' },
            },
          });
          if (!values.firm || !isUuid(values.firm)) throw new UsageError('api-key create needs --firm ID (a UUID)');
          for (const org of values.org ?? []) if (!isUuid(org)) throw new UsageError(`--org ${org} is not a UUID`);
          const { key, record } = await createApiKey(database.db, {
            firmId: values.firm,
            ...(values.name ? { name: values.name } : {}),
            ...(values.scope ? { scopes: values.scope } : {}),
            ...(values.org ? { organizationIds: values.org } : {}),
          });
          print(
            Boolean(values.json),
            { id: record.id, apiKey: key, scopes: record.scopes, organizationIds: record.organizationIds },
            `API key ${record.id}\n${key}\n(shown once; scopes: ${record.scopes.join(' ')})`,
          );
          return 0;
        }
        if (sub === 'revoke') {
          const id = argv[2];
          if (!id || !isUuid(id)) throw new UsageError('api-key revoke needs an ID (a UUID)');
          const found = await revokeApiKey(database.db, id);
          if (!found) {
            io.err(`no API key ${id}`);
            return 1;
          }
          io.out(`revoked ${id}`);
          return 0;
        }
        throw new UsageError(`unknown api-key command: ${sub ?? '(none)'}`);
      }
      case 'oauth-client': {
        if (sub === 'create') {
          const { values } = parseArgs({
            args: argv.slice(2),
            options: {
              name: { type: 'string' },
              'redirect-uri': { type: 'string', multiple: true },
              public: { type: 'boolean' },
              firm: { type: 'string' },
              json: { type: 'boolean' },
            },
          });
          if (!values.name) throw new UsageError('oauth-client create needs --name NAME');
          if (!values['redirect-uri']?.length) throw new UsageError('oauth-client create needs --redirect-uri URI');
          if (values.firm && !isUuid(values.firm)) throw new UsageError(`--firm ${values.firm} is not a UUID`);
          const { client, clientSecret } = await createOAuthClient(database.db, {
            name: values.name,
            redirectUris: values['redirect-uri'],
            isPublic: Boolean(values.public),
            firmId: values.firm ?? null,
          });
          print(
            Boolean(values.json),
            {
              clientId: client.clientId,
              clientSecret,
              name: client.name,
              redirectUris: client.redirectUris,
              public: client.isPublic,
              firmId: client.firmId,
            },
            [
              `OAuth client ${client.name}`,
              `client_id:     ${client.clientId}`,
              clientSecret
                ? `client_secret: ${clientSecret}  (shown once)`
                : 'public client: no secret; PKCE protects its codes',
              `redirect URIs: ${client.redirectUris.join(' ')}`,
            ].join('\n'),
          );
          return 0;
        }
        if (sub === 'revoke') {
          const clientId = argv[2];
          if (!clientId) throw new UsageError('oauth-client revoke needs a CLIENT_ID');
          if (!(await revokeOAuthClient(database.db, clientId))) {
            io.err(`no OAuth client ${clientId}`);
            return 1;
          }
          io.out(`revoked ${clientId}`);
          return 0;
        }
        throw new UsageError(`unknown oauth-client command: ${sub ?? '(none)'}`);
      }
      case 'audit': {
        if (sub !== 'verify') throw new UsageError('usage: audit verify [--firm ID] [--json]');
        const { values } = parseArgs({
          args: argv.slice(2),
          options: { firm: { type: 'string' }, json: { type: 'boolean' } },
        });
        if (values.firm && !isUuid(values.firm)) throw new UsageError(`--firm ${values.firm} is not a UUID`);
        const result = await verifyAuditChains(database.db, values.firm ? { firmId: values.firm } : {});
        const summary = `${result.events} agent audit event${result.events === 1 ? '' : 's'} of ${result.firms} firm${
          result.firms === 1 ? '' : 's'
        }`;
        if (values.json) io.out(JSON.stringify(result));
        else if (result.ok) io.out(`audit trail intact: ${summary}`);
        if (!result.ok && !values.json) {
          io.err(
            [
              `audit trail broken (${summary}):`,
              ...result.breaks.map((b) => `  firm ${b.firmId}: event ${b.seq} (${b.id}) ${b.problem}`),
            ].join('\n'),
          );
        }
        return result.ok ? 0 : 1;
      }
      case undefined:
      case 'idempotency': {
        if (sub !== 'purge') throw new UsageError('usage: idempotency purge');
        const purged = await purgeExpiredIdempotencyKeys(database.db);
        io.out(`purged ${purged} expired idempotency record${purged === 1 ? '' : 's'}`);
        return 0;
      }
      case 'help':
      case '--help':
        io.out(USAGE);
        return command ? 0 : 2;
      default:
        throw new UsageError(`unknown command: ${command}`);
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (isDomainError(err)) {
      io.err(`${err.code}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}
