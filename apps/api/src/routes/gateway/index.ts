import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { approvalRoutes } from './approvals';
import { auditRoutes } from './audit';
import { clientRoutes } from './clients';
import { closeGatewayRoutes } from './closes';
import { addGatewayHooks } from './hooks';
import { limitRoutes } from './limits';
import { passThroughRoutes } from './passthrough';
import { queryRoutes } from './query';
import { recordRoutes, shortcutRoutes } from './records';
import { reportRoutes } from './reports';
import { skillRoutes } from './skills';

export { CAPABILITIES } from './clients';

/**
 * The agent gateway (spec: agent-gateway-api.md), under /agent/v1: thin doors onto the gateway service
 * (`app.gateway`, from @firm/gateway), one file per resource. Every route that acts on a client names it as
 * `:clientId`; the auth plugin checks it is an organization this credential may see, and the hooks (`hooks.ts`) that
 * the firm opened it to agents (`agentAccess`), refusing writes to a read-only client before the body is read. Every
 * call of an authenticated caller is recorded in the firm's hash-chained agent audit trail before its response is
 * sent.
 */
export const gatewayRoutes: FastifyPluginAsyncTypebox = async (app) => {
  addGatewayHooks(app);
  // In this order: the OpenAPI document lists the routes as they are registered, and the shortcut lists' path
  // matches any one segment after a client.
  await app.register(limitRoutes);
  await app.register(clientRoutes);
  await app.register(approvalRoutes);
  await app.register(recordRoutes);
  await app.register(queryRoutes);
  await app.register(passThroughRoutes);
  await app.register(reportRoutes);
  await app.register(skillRoutes);
  await app.register(closeGatewayRoutes);
  await app.register(auditRoutes);
  await app.register(shortcutRoutes);
};
