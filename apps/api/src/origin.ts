import type { FastifyRequest } from 'fastify';

export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';
export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

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
