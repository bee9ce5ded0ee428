import { DomainError } from '@firm/core';
import { canManageApps, type Manager, managerRoleOf } from '@firm/identity';
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

/**
 * The owner or admin managing the firm's people and keys, for the domain's rules and the audit trail. OAuth tokens
 * never manage them (their scopes cannot hold users:* or keys:*; this says so again); a credential acting for a
 * user needs that user to be an active owner or admin now; an operator's key (made with the CLI, no user) manages as
 * an owner.
 */
export async function firmManager(request: FastifyRequest, what: string): Promise<Manager> {
  const { credential } = request;
  if (credential.kind === 'oauth_token') throw new DomainError('FORBIDDEN', `an OAuth token cannot ${what}`);
  const role = await managerRoleOf(request.server.database.db, credential.firmId, credential.userId);
  if (!role) throw new DomainError('FORBIDDEN', `only owners and admins of the firm ${what}`);
  return {
    firmId: credential.firmId,
    kind: credential.kind,
    id: credential.id,
    requestId: request.id,
    role,
    userId: credential.userId,
  };
}
