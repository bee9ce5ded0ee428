import type { Scope } from '@firm/core';
import type { Organization } from './organizations';

/** Who is calling, whatever the kind of credential. Built by the auth layer, read by every route. */
export interface Credential {
  kind: 'api_key' | 'oauth_token' | 'session';
  /** The API key id, token family id or user id: what audit events and rate limits key on. */
  id: string;
  firmId: string;
  scopes: ReadonlySet<Scope>;
  /** Null: every organization of the firm. */
  organizationIds: readonly string[] | null;
  userId: string | null;
  /** OAuth tokens: the resource (RFC 8707) their approval is bound to; null for the API as a whole. */
  resource?: string | null;
  /**
   * The organization a request acts on when it names none: set for browser sessions of a firm with
   * exactly one organization (spec part 5: the header is needed only when there are several).
   */
  defaultOrganizationId?: string | null;
  /**
   * The organization the request names, read with the credential in one query when the credential kind can:
   * `row` is null when it is not an organization of the credential's firm. Whether this credential may see it
   * is still checked (`canSeeOrganization`).
   */
  prefetchedOrganization?: { id: string; row: Organization | null };
}

export const canSeeOrganization = (credential: Credential, organizationId: string): boolean =>
  credential.organizationIds === null || credential.organizationIds.includes(organizationId);
