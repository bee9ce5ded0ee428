import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { sendError } from './responses';

// What the router answers itself: 405 with Allow beside 404, and the framework's own refusals in the error shape.

export function methodNotAllowed(request: FastifyRequest, reply: FastifyReply, path: string, allow: string[]) {
  reply.header('allow', allow.join(', '));
  return sendError(reply, request, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}`);
}

/** The longest path parameter the router takes (Fastify's maxParamLength); ids here are far shorter. */
export const MAX_PARAM_LENGTH = 100;

/**
 * What the router answers before any route runs (a path parameter over MAX_PARAM_LENGTH, a path that is not a valid
 * URL), in the documented error shape with its request id rather than Fastify's own body.
 */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('x-request-id', request.id);
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `a path segment is longer than ${MAX_PARAM_LENGTH} characters; no id is that long`
      : 'the path is not a valid URL';
  return sendError(reply, request, 'VALIDATION_ERROR', message, [{ field: 'path', message }]);
}

export function isBodyError(err: unknown): boolean {
  const code = (err as FastifyError).code ?? '';
  return code.startsWith('FST_ERR_CTP_') || code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE';
}

export interface RouteMethods {
  /** For a path, the methods its most exact routes take (HEAD wherever GET is). */
  allowed(path: string): string[];
  /** The route patterns some path of which another route names more exactly. */
  shadowed: ReadonlySet<string>;
}

const segmentRank = (segment: string) => (segment.startsWith('*') ? 0 : segment.startsWith(':') ? 1 : 2);

/** Whether `a` names some of `b`'s paths more exactly: as long, equal where `b` is literal, and literal where `b` is not. */
function moreExact(a: string, b: string): boolean {
  const as = a.split('/');
  const bs = b.split('/');
  if (as.length !== bs.length || a.includes('*') || b.includes('*')) return false;
  let strictly = false;
  for (let i = 0; i < as.length; i++) {
    const [sa, sb] = [as[i] as string, bs[i] as string];
    const [ra, rb] = [segmentRank(sa), segmentRank(sb)];
    if (rb === 2 && (ra !== 2 || sa !== sb)) return false;
    if (ra < rb) return false;
    if (ra > rb) strictly = true;
  }
  return strictly;
}

/** A router of the route table: for a path, the route each method would take, and which of them is most exact. */
export function routeMethods(routes: readonly { method: string; url: string }[]): RouteMethods {
  const router = FindMyWay({ ignoreTrailingSlash: true });
  const methods = [...new Set(routes.map((r) => r.method))];
  for (const { method, url } of routes) router.on(method as HTTPMethod, url, () => {}, { url });
  const urls = [...new Set(routes.map((r) => r.url))];
  const shadowed = new Set(urls.filter((b) => urls.some((a) => moreExact(a, b))));
  return {
    shadowed,
    allowed(path) {
      const found = methods.flatMap((method) => {
        const match = router.find(method as HTTPMethod, path);
        return match ? [{ method, url: (match.store as { url: string }).url }] : [];
      });
      const allow = found.filter((f) => !found.some((g) => moreExact(g.url, f.url))).map((f) => f.method);
      if (allow.includes('GET')) allow.push('HEAD');
      return allow.sort();
    },
  };
}
