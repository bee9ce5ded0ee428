import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isConnectionLost } from '@firm/db';
import { sendError, toErrorResponse } from './responses';
import { isBodyError, methodNotAllowed, routeMethods, type RouteMethods } from './routing';

export { ERROR_TABLE } from './catalogue';
export { ErrorResponse, errorResponses, INVALID_IDEMPOTENCY_KEY, sendError, toErrorResponse } from './responses';
export { frameworkError, MAX_PARAM_LENGTH } from './routing';

export const errorsPlugin = fp(async (app: FastifyInstance) => {
  let routes: RouteMethods | undefined;
  const routesOf = () => (routes ??= routeMethods(app.routeTable));
  /** No route takes the request: 405 with Allow when some route takes its path with another method, else 404. */
  const noRoute = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allow = routesOf().allowed(path);
    if (allow.length > 0) return methodNotAllowed(request, reply, path, allow);
    return sendError(reply, request, 'ROUTE_NOT_FOUND', `no route ${request.method} ${path}`);
  };
  // A path that a route names more exactly than the one the router chose (`/webhooks/event-types` beside
  // `/webhooks/:id`, `/clients/:id/query` beside `/clients/:id/:entity`) is that route's resource: another method on it
  // is 405, not the looser route's validation error.
  app.addHook('onRequest', async (request, reply) => {
    const url = request.routeOptions.url;
    if (!url || !routesOf().shadowed.has(url)) return;
    const path = request.url.split('?')[0] ?? '/';
    const allow = routesOf().allowed(path);
    if (!allow.includes(request.method)) return methodNotAllowed(request, reply, path, allow);
  });
  app.setErrorHandler((err, request, reply) => {
    // A body no route would read (QUERY without a Content-Type, bad JSON to an unknown path): no route, first.
    if (request.is404 && isBodyError(err)) return noRoute(request, reply);
    const mapped = toErrorResponse(err);
    if (mapped.code === 'INTERNAL_ERROR') request.log.error({ err }, 'unexpected error');
    // An outage is logged once when it starts and once when it ends, not per request.
    else if (mapped.code === 'SERVICE_UNAVAILABLE' && isConnectionLost(err)) app.databaseStatus.reportUnavailable(err);
    return sendError(reply, request, mapped.code, mapped.message, mapped.details);
  });
  app.setNotFoundHandler(noRoute);
});
