import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';

export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';
export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';
/** The MCP endpoint: a protected resource of its own, with its metadata at the RFC 9728 path-aware address. */
export const MCP_PATH = '/mcp';
export const MCP_RESOURCE_METADATA_PATH = `${PROTECTED_RESOURCE_METADATA_PATH}${MCP_PATH}`;

/**
 * The origin clients reach us at: PUBLIC_ORIGIN when set (set it in production, behind proxies),
 * else the request's own scheme and host. It is the OAuth issuer and the protected resource.
 */
export function publicOrigin(request: FastifyRequest): string {
  return request.server.config.PUBLIC_ORIGIN ?? `${request.protocol}://${request.host}`;
}

/**
 * The origin links made outside a request name (the agent gateway's, whose calls carry no HTTP request): PUBLIC_ORIGIN
 * when set (production requires it), else the address the server listens on, else localhost.
 */
export function serviceOrigin(app: FastifyInstance): string {
  if (app.config.PUBLIC_ORIGIN) return app.config.PUBLIC_ORIGIN;
  const address = app.server.listening ? app.server.address() : null;
  if (address && typeof address === 'object') {
    const host = ['0.0.0.0', '::', '127.0.0.1', '::1'].includes(address.address) ? 'localhost' : address.address;
    return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  }
  return `http://localhost:${app.config.PORT}`;
}

/**
 * The WWW-Authenticate challenge of the partner API (RFC 6750 3, RFC 9728 5.1): it names the
 * protected-resource metadata, from which an OAuth client discovers everything else.
 */
export function bearerChallenge(request: FastifyRequest, params: { error?: string; scope?: string } = {}): string {
  const parts = [`resource_metadata="${publicOrigin(request)}${PROTECTED_RESOURCE_METADATA_PATH}"`];
  if (params.error) parts.push(`error="${params.error}"`);
  if (params.scope) parts.push(`scope="${params.scope}"`);
  return `Bearer ${parts.join(', ')}`;
}

/**
 * RFC 8707: where an OAuth token may be used, by the resource its approval was bound to. A token for the MCP endpoint
 * works there only (and in the calls the endpoint makes on its caller's behalf, `viaMcp`); a token for a path works
 * under that path; a token for the whole site (or for none) works everywhere but the MCP endpoint.
 */
export function tokenFitsPath(resource: string | null | undefined, path: string, viaMcp: boolean): boolean {
  let bound = '';
  if (resource) {
    try {
      bound = new URL(resource).pathname.replace(/\/+$/, '');
    } catch {
      return false;
    }
  }
  if (bound === MCP_PATH) return viaMcp || path === MCP_PATH;
  if (path === MCP_PATH) return false;
  return bound === '' || path === bound || path.startsWith(`${bound}/`);
}

const hostnameOf = (host: string): string => {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  return (bracketed ? (bracketed[1] as string) : host.replace(/:\d+$/, '')).toLowerCase();
};

/**
 * The one rule for requests a browser can be made to send: the MCP endpoint (the MCP transport requires servers to
 * validate Origin, against DNS rebinding) and the form posts of the sign-in and consent pages.
 *
 * - Host: PUBLIC_ORIGIN's host when set, a host of ALLOWED_ORIGINS, `localhost`, or an IP address. A name that
 *   merely resolves to this server (a rebinding attacker's) is refused; IP addresses cannot be rebound.
 * - Origin, when the client sends one: the service's own origin (PUBLIC_ORIGIN, or the request's scheme and Host once
 *   the Host passed), or one of ALLOWED_ORIGINS. `null` (sandboxed frames, some redirects) is never allowed. Clients
 *   that are not browsers send no Origin and pass.
 *
 * Returns why the request is refused, or null.
 */
export function browserOriginRefusal(request: FastifyRequest): string | null {
  const config = request.server.config;
  const allowed = (config.ALLOWED_ORIGINS ?? '').split(',').filter(Boolean);
  if (config.PUBLIC_ORIGIN) allowed.push(config.PUBLIC_ORIGIN);
  const host = request.host.toLowerCase();
  const hostname = hostnameOf(host);
  const hostAllowed = hostname === 'localhost' || isIP(hostname) !== 0 || allowed.some((o) => new URL(o).host === host);
  if (!hostAllowed) return `the Host ${request.host} is not this service's; set PUBLIC_ORIGIN to serve it`;
  const origin = request.headers.origin;
  if (origin === undefined) return null;
  const own = `${request.protocol}://${host}`;
  if (origin.toLowerCase() === own || allowed.some((o) => o.toLowerCase() === origin.toLowerCase())) return null;
  return `requests from the origin ${origin} are not accepted; ALLOWED_ORIGINS lists further origins`;
}
