export { agingReport, contactStatement, openDocuments } from './aging';
export type { AgingReport, AgingSide, OpenDocument } from './aging';
export { documentsEnteredAfterReconciliation, missingRecurringBills, possibleDuplicateDocuments } from './close-scans';
export type { PossibleDuplicate } from './close-scans';
export {
  contactNames,
  contactsAtOffset,
  contactsByIds,
  createContact,
  getContact,
  listContacts,
  presentContact,
  updateContact,
} from './contacts';
export type { Contact, ContactKind } from './contacts';
export {
  convertEstimate,
  createDocument,
  documentTypes,
  getDocument,
  listDocuments,
  liveDocumentsAtOffset,
  liveDocumentsByIds,
  presentDocument,
  updateDocument,
  voidDocument,
  withDetail,
} from './documents';
export type { Document, DocumentInput, DocumentType, LineDocumentType, LineInput, PaymentType } from './documents';
export {
  createItem,
  createTaxRate,
  getItem,
  getTaxRate,
  itemsAtOffset,
  itemsByIds,
  listItems,
  listTaxRates,
  presentItem,
  presentTaxRate,
  taxRatesAtOffset,
  taxRatesByIds,
  updateItem,
  updateTaxRate,
} from './items';
export type { Item, TaxRate } from './items';
export { createPayment, voidPayment } from './payments';
export type { AllocationInput, PaymentInput } from './payments';
export {
  activeTaxRates,
  contactNameOf,
  contactNamesSelect,
  documentEntryOf,
  documentMatchAmounts,
  documentState,
  documentTypeOf,
  lockDocuments,
  matchableDocumentsQuery,
} from './lookups';
export type { ActiveTaxRate } from './lookups';
