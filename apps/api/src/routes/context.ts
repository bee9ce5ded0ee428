import type { FastifyRequest } from 'fastify';

/** Who is acting, for the ledger's audit trail. */
export const ledgerContext = (request: FastifyRequest) => ({
  firmId: request.credential.firmId,
  actor: { kind: request.credential.kind, id: request.credential.id },
  requestId: request.id,
});
