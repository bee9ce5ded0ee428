import type { Db } from '@firm/db';
import { createLedgerFixture, type LedgerFixture } from '@firm/ledger/testing';
import { type Contact, type ContactKind, createContact } from './contacts';

/** A ledger fixture (firm, organization with the standard chart) plus a customer and a vendor. */
export interface DocumentsFixture extends LedgerFixture {
  customer: Contact;
  vendor: Contact;
  contact(kind: ContactKind, name: string): Promise<Contact>;
}

export async function createDocumentsFixture(db: Db): Promise<DocumentsFixture> {
  const f = await createLedgerFixture(db);
  const contact = (kind: ContactKind, name: string) =>
    db.transaction((tx) => createContact(tx, f.ctx, f.orgId, { kind, name }));
  return {
    ...f,
    customer: await contact('customer', 'Acme Corp'),
    vendor: await contact('vendor', 'Paper Supply Co'),
    contact,
  };
}
