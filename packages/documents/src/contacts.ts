import { DomainError, decodeCursor, type EventType, isUuid, type Page, toPage } from '@firm/core';
import { type Address, contacts, type contactKind, type Executor, rowsOf, type Tx } from '@firm/db';
import { type LedgerContext, nowOf, recordEvent } from '@firm/ledger';
import { and, asc, count, eq, inArray, sql } from 'drizzle-orm';
import { rethrowNameTaken } from './common';

export type Contact = typeof contacts.$inferSelect;
export type ContactKind = (typeof contactKind.enumValues)[number];

export interface ContactInput {
  kind: ContactKind;
  name: string;
  email?: string | null | undefined;
  phone?: string | null | undefined;
  billingAddress?: Address | null | undefined;
  shippingAddress?: Address | null | undefined;
  taxId?: string | null | undefined;
}

export type ContactPatch = Partial<ContactInput> & { archived?: boolean | undefined };

export interface ContactFilter {
  limit: number;
  cursor?: string | undefined;
  kind?: 'customer' | 'vendor' | undefined;
  includeArchived?: boolean | undefined;
}

/** The contact as the API returns it and as events carry it. */
export const presentContact = (c: Contact) => ({
  id: c.id,
  organizationId: c.organizationId,
  kind: c.kind,
  name: c.name,
  email: c.email,
  phone: c.phone,
  billingAddress: c.billingAddress ?? null,
  shippingAddress: c.shippingAddress ?? null,
  taxId: c.taxId,
  archived: c.archived,
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString(),
});

export const contactNotFound = () => new DomainError('CONTACT_NOT_FOUND', 'contact not found');

/** True when a contact of `kind` may appear on a document for a customer (`customer`) or a vendor. */
export const contactServes = (kind: ContactKind, side: 'customer' | 'vendor') => kind === 'both' || kind === side;

const contactEvent = (tx: Tx, ctx: LedgerContext, action: EventType, contact: Contact) =>
  recordEvent(tx, ctx, {
    organizationId: contact.organizationId,
    action,
    resourceType: 'contact',
    resourceId: contact.id,
    data: { name: contact.name, kind: contact.kind, archived: contact.archived },
    payload: presentContact(contact),
  });

/** Contacts by name (case-insensitive), then id. */
export async function listContacts(
  db: Executor,
  organizationId: string,
  filter: ContactFilter,
): Promise<Page<Contact>> {
  let after: [string, string] | null = null;
  if (filter.cursor) {
    after = decodeCursor(filter.cursor, ['string', 'uuid']).map(String) as [string, string];
  }
  const rows = await db
    .select()
    .from(contacts)
    .where(
      and(
        eq(contacts.organizationId, organizationId),
        filter.includeArchived ? undefined : eq(contacts.archived, false),
        filter.kind ? sql`${contacts.kind} in (${filter.kind}::contact_kind, 'both')` : undefined,
        after ? sql`(lower(${contacts.name}), ${contacts.id}) > (${after[0]}, ${after[1]}::uuid)` : undefined,
      ),
    )
    .orderBy(sql`lower(${contacts.name})`, asc(contacts.id))
    .limit(filter.limit + 1);
  return toPage(rows, filter.limit, (c) => [c.name.toLowerCase(), c.id]);
}

/**
 * A contact of the organization. `lock` holds its row until commit: documents take it `share` while they are
 * written for the contact, a change of the contact takes it `update`, so a change of kind or an archive and a
 * document written for the contact see each other whichever commits first.
 */
export async function getContact(
  db: Executor,
  organizationId: string,
  id: string,
  lock?: 'share' | 'update',
): Promise<Contact> {
  if (!isUuid(id)) throw contactNotFound();
  const query = db
    .select()
    .from(contacts)
    .where(and(eq(contacts.organizationId, organizationId), eq(contacts.id, id)));
  const [row] = lock ? await query.for(lock) : await query;
  if (!row) throw contactNotFound();
  return row;
}

/** The organization's contacts of one of `kinds`. */
const ofKinds = (organizationId: string, kinds: readonly ContactKind[]) =>
  and(eq(contacts.organizationId, organizationId), inArray(contacts.kind, [...kinds]));

/** The organization's contacts of one of `kinds` among `ids` (well-formed), archived or not. */
export async function contactsByIds(
  db: Executor,
  organizationId: string,
  kinds: readonly ContactKind[],
  ids: readonly string[],
): Promise<Contact[]> {
  return db
    .select()
    .from(contacts)
    .where(and(ofKinds(organizationId, kinds), inArray(contacts.id, [...ids])));
}

/**
 * The organization's contacts of one of `kinds` by name, `limit` of them from `offset`, and how many there are: for
 * lists paged by position (the embedded platform's).
 */
export async function contactsAtOffset(
  db: Executor,
  organizationId: string,
  kinds: readonly ContactKind[],
  offset: number,
  limit: number,
): Promise<{ rows: Contact[]; total: number }> {
  const rows = await db
    .select()
    .from(contacts)
    .where(ofKinds(organizationId, kinds))
    .orderBy(asc(contacts.name), asc(contacts.id))
    .offset(offset)
    .limit(limit);
  const [total] = await db.select({ n: count() }).from(contacts).where(ofKinds(organizationId, kinds));
  return { rows, total: total?.n ?? 0 };
}

/** The name of each of the organization's contacts among `ids` (well-formed, any kind). */
export async function contactNames(
  db: Executor,
  organizationId: string,
  ids: readonly string[],
): Promise<{ id: string; name: string }[]> {
  return db
    .select({ id: contacts.id, name: contacts.name })
    .from(contacts)
    .where(and(eq(contacts.organizationId, organizationId), inArray(contacts.id, [...ids])));
}

export async function createContact(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: ContactInput,
): Promise<Contact> {
  const now = nowOf(ctx);
  let contact: Contact;
  try {
    const [row] = await tx
      .insert(contacts)
      .values({
        organizationId,
        kind: input.kind,
        name: input.name.trim(),
        email: input.email ?? null,
        phone: input.phone ?? null,
        billingAddress: input.billingAddress ?? null,
        shippingAddress: input.shippingAddress ?? null,
        taxId: input.taxId ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    contact = row as Contact;
  } catch (err) {
    rethrowNameTaken(err, 'contacts_org_name_key', 'CONTACT_NAME_TAKEN', input.name);
  }
  await contactEvent(tx, ctx, 'contact.created', contact);
  return contact;
}

/**
 * Changes a contact. Its kind cannot drop a side it already has documents on (a vendor with bills stays
 * a vendor), so every document keeps a contact of the right kind.
 */
export async function updateContact(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  patch: ContactPatch,
): Promise<Contact> {
  const current = await getContact(tx, organizationId, id, 'update');
  if (patch.kind && patch.kind !== current.kind && patch.kind !== 'both') {
    const dropped = patch.kind === 'customer' ? 'vendor' : 'customer';
    const types =
      dropped === 'vendor'
        ? sql`('bill', 'vendor_credit', 'bill_payment')`
        : sql`('invoice', 'customer_payment', 'sales_receipt', 'credit_memo', 'refund_receipt', 'estimate')`;
    const [used] = rowsOf<{ n: number }>(
      await tx.execute(sql`select count(*)::int as n from documents
        where organization_id = ${organizationId} and contact_id = ${id} and type in ${types}`),
    );
    if ((used?.n ?? 0) > 0) {
      throw new DomainError('INVALID_STATE', `the contact has ${dropped} documents; its kind must keep ${dropped}`, [
        { field: 'kind', message: `has ${dropped} documents` },
      ]);
    }
  }
  let contact: Contact;
  try {
    const [row] = await tx
      .update(contacts)
      .set({
        ...(patch.kind !== undefined ? { kind: patch.kind } : {}),
        ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
        ...(patch.email !== undefined ? { email: patch.email } : {}),
        ...(patch.phone !== undefined ? { phone: patch.phone } : {}),
        ...(patch.billingAddress !== undefined ? { billingAddress: patch.billingAddress } : {}),
        ...(patch.shippingAddress !== undefined ? { shippingAddress: patch.shippingAddress } : {}),
        ...(patch.taxId !== undefined ? { taxId: patch.taxId } : {}),
        ...(patch.archived !== undefined ? { archived: patch.archived } : {}),
        updatedAt: nowOf(ctx),
      })
      .where(and(eq(contacts.organizationId, organizationId), eq(contacts.id, id)))
      .returning();
    contact = row as Contact;
  } catch (err) {
    rethrowNameTaken(err, 'contacts_org_name_key', 'CONTACT_NAME_TAKEN', patch.name);
  }
  await contactEvent(tx, ctx, 'contact.updated', contact);
  return contact;
}
