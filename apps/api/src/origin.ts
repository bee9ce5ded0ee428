import type { FastifyRequest } from 'fastify';

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
