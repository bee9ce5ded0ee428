import { DomainError } from '@firm/core';
import { canManageApps } from '@firm/identity';
import type { FastifyRequest } from 'fastify';

/** Who is acting, for the ledger's audit trail. */
export const ledgerContext = (request: FastifyRequest) => ({
  firmId: request.credential.firmId,
  actor: { kind: request.credential.kind, id: request.credential.id },
  requestId: request.id,
});

/**
 * Owners and admins only. A credential acting for a user (a session, an OAuth token, a key a user made) is checked
 * against that user's current role; an operator's key (made with the CLI, no user) is firm-level and needs only the
 * scope. `what` ends the refusal: "only owners and admins of the firm <what>".
 */
export async function requireFirmManager(request: FastifyRequest, what: string): Promise<void> {
  const { userId, firmId } = request.credential;
  if (userId && !(await canManageApps(request.server.database.db, userId, firmId))) {
    throw new DomainError('FORBIDDEN', `only owners and admins of the firm ${what}`);
  }
}
