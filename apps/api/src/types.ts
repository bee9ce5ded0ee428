import type { AttachmentStores, DownloadLinkKeys } from '@firm/attachments';
import type { Aggregator, TokenKeys } from '@firm/banking';
import type { Scope } from '@firm/core';
import type { Database, DatabaseStatus } from '@firm/db';
import type { AuditTrail, Client, GatewayAudit } from '@firm/gateway';
import type { Credential, Organization } from '@firm/identity';
import type { SecretKeys } from '@firm/webhooks';
import type { Config } from './config';

/**
 * How a route picks its organization: from the `x-organization-id` header, from `:companyId`, from the agent
 * gateway's `:clientId`, or not at all (`none`); `firm`: none, and the route manages the whole firm, so only a
 * credential that covers every organization of the firm may call it.
 */
export type OrganizationSource = 'header' | 'path' | 'client' | 'none' | 'firm';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a credential needs; routes without one are public. */
    scope?: Scope;
    /** The scope this request needs when it depends on the request (the gateway's entity routes); else `scope`. */
    scopeOf?: (request: FastifyRequest) => Scope | undefined;
    organization?: OrganizationSource;
    /** Answers without the database (health, readiness, the OpenAPI document): never refused while it is down. */
    withoutDatabase?: boolean;
    /** Agent gateway: the operation its audit trail records (`transactions.create`...); unset, nothing is recorded. */
    audit?: string;
    /** Agent gateway: the route writes to the client's books, which a client with agent access `read` refuses. */
    agentWrite?: boolean;
    /**
     * The route writes to an archived company too (archiving and unarchiving it): the refusal of every other write to
     * an archived company (409 COMPANY_ARCHIVED, `refuseArchivedWrite`) does not apply to it.
     */
    archivedAllowed?: boolean;
    /**
     * A form post of a page (`page`: refused with an HTML page) whose Origin and Host must pass the browser rule
     * (`browserOriginRefusal`); /mcp is held to it by its path.
     */
    browserOrigin?: 'page' | 'json';
  }
  interface FastifyInstance {
    database: Database;
    /** Whether the database answers and is migrated; failures are logged once per change. */
    databaseStatus: DatabaseStatus;
    config: Config;
    /** The bank-data aggregator bank feeds go through; null with BANK_FEEDS=off. */
    aggregator: Aggregator | null;
    /** Keys sealing aggregator access tokens at rest; null with BANK_FEEDS=off. */
    bankTokenKeys: TokenKeys | null;
    /** The keys webhook signing secrets are sealed under. */
    webhookSecretKeys: SecretKeys;
    /** The agent audit trail's keys and the anchors of its chains' heads. */
    auditTrail: AuditTrail;
    /** Where attachments' files are stored (each file names its store) and the store new files go to. */
    attachmentStores: AttachmentStores;
    /** The keys signing attachments' download links (derived from the audit keys). */
    downloadLinkKeys: DownloadLinkKeys;
    /** Every route registered, as method and URL pattern. */
    routeTable: ReadonlyArray<{ method: string; url: string }>;
    /** Builds the response serializers no request has needed yet (they are built on first use); how many. */
    compileSerializers(): number;
  }
  interface FastifyRequest {
    /** Set on every route that declares a scope. */
    credential: Credential;
    /** Set on every route whose `organization` is `header` or `path`. */
    organization: Organization;
    /** Set on agent gateway routes with `organization: 'client'`. */
    client: Client;
    /** What the agent gateway's audit trail records about this request, filled in by its handler. */
    agentAudit: GatewayAudit;
  }
}
