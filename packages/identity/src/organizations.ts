import { DomainError, decodeCursor, isUuid, type Page, toPage } from '@firm/core';
import { type Executor } from '@firm/db';
import { type Company, companiesOfFirm, companyOfFirm, firmCompanyIds } from '@firm/ledger';
import { type Credential, canSeeOrganization } from './credentials';

export type Organization = Company;

/** Which organizations a list shows: the active ones (the default), the archived ones, or both. */
export type OrganizationStatusFilter = 'active' | 'archived' | 'all';

export async function listOrganizations(
  db: Executor,
  credential: Credential,
  page: { limit: number; cursor?: string | undefined; status?: OrganizationStatusFilter | undefined },
): Promise<Page<Organization>> {
  if (credential.organizationIds?.length === 0) return { data: [], nextCursor: null };
  // The organizations a credential may see: its firm's, narrowed to the key's list when it has one.
  const rows = await companiesOfFirm(db, credential.firmId, {
    ids: credential.organizationIds,
    status: page.status ?? 'active',
    afterId: page.cursor ? String(decodeCursor(page.cursor, ['uuid'])[0]) : undefined,
    limit: page.limit + 1,
  });
  return toPage(rows, page.limit, (o) => [o.id]);
}

/** The organization when this credential may see it; null otherwise (callers answer 404 either way). */
export async function findVisibleOrganization(
  db: Executor,
  credential: Credential,
  organizationId: string,
): Promise<Organization | null> {
  if (!canSeeOrganization(credential, organizationId)) return null;
  return (await companyOfFirm(db, credential.firmId, organizationId)) ?? null;
}

/**
 * The organizations `ids` names, deduplicated, when each is one of the firm's and within `visible` (null: the whole
 * firm); else INVALID_ORGANIZATION naming the others. For the companies a member or a key is limited to.
 */
export async function requireOrganizations(
  db: Executor,
  firmId: string,
  ids: readonly string[],
  visible: readonly string[] | null = null,
): Promise<string[]> {
  const wanted = [...new Set(ids.map((id) => id.toLowerCase()))];
  const queried = wanted.filter(isUuid);
  const found = new Set(queried.length === 0 ? [] : await firmCompanyIds(db, firmId, queried));
  const unknown = wanted.filter((id) => !found.has(id) || (visible !== null && !visible.includes(id)));
  if (unknown.length > 0) {
    throw new DomainError(
      'INVALID_ORGANIZATION',
      `not a company of this firm that the caller can see: ${unknown.join(', ')}`,
      [{ field: 'organizationIds', message: 'every id must be a company (organization) of the firm', unknown }],
    );
  }
  return wanted;
}
