import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { VERSION } from '../../version';

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
  version: Type.String(),
  database: Type.Object({ reachable: Type.Boolean(), kind: Type.String() }),
});

export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/api/health',
    {
      schema: {
        tags: ['health'],
        summary: 'Deployment health',
        description: 'Public. 200 when the database answers, 503 when it does not.',
        response: { 200: Health, 503: Health },
      },
    },
    async (_request, reply) => {
      const reachable = await app.database.ping();
      return reply.code(reachable ? 200 : 503).send({
        status: reachable ? 'ok' : 'degraded',
        version: VERSION,
        database: { reachable, kind: app.database.kind },
      });
    },
  );
};
