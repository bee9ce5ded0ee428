import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { VERSION } from '../../version';

const Health = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')], {
      description: '`degraded` while the database is unreachable or not migrated; the process itself is alive.',
    }),
    version: Type.String(),
    database: Type.Object({ reachable: Type.Boolean(), kind: Type.String() }),
  },
  { additionalProperties: false },
);

const Readiness = Type.Object(
  {
    status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
    version: Type.String(),
    database: Type.Object({
      reachable: Type.Boolean(),
      kind: Type.String(),
      pendingMigrations: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
        description: 'Migrations of this build the database has not applied; null when it could not be asked.',
      }),
    }),
  },
  { additionalProperties: false },
);

/**
 * Liveness and readiness, both public and outside the rate limits (orchestrators and load balancers poll them).
 * Liveness asks nothing of the database; readiness asks it whether it answers and is migrated.
 */
export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/api/health',
    {
      config: { rateLimit: false, withoutDatabase: true },
      schema: {
        tags: ['health'],
        summary: 'Liveness',
        description:
          'Public, not rate limited. 200 while the process serves requests, whatever the database does ' +
          '(`status: degraded` says it is unreachable or not migrated); use `/api/ready` to route traffic.',
        response: { 200: Health },
      },
    },
    async () => {
      const { reachable, ready } = app.databaseStatus.known;
      return {
        status: reachable && ready ? ('ok' as const) : ('degraded' as const),
        version: VERSION,
        database: { reachable, kind: app.database.kind },
      };
    },
  );

  app.get(
    '/api/ready',
    {
      config: { rateLimit: false, withoutDatabase: true },
      schema: {
        tags: ['health'],
        summary: 'Readiness',
        description:
          'Public, not rate limited. 200 when the database answers and has every migration of this build applied; ' +
          '503 otherwise, and while the server shuts down.',
        response: { 200: Readiness, 503: Readiness },
      },
    },
    async (_request, reply) => {
      const readiness = await app.databaseStatus.check();
      return reply.code(readiness.ready ? 200 : 503).send({
        status: readiness.ready ? 'ready' : 'not_ready',
        version: VERSION,
        database: {
          reachable: readiness.reachable,
          kind: app.database.kind,
          pendingMigrations: readiness.pendingMigrations,
        },
      });
    },
  );
};
