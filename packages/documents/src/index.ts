export { agingReport, contactStatement } from './aging';
export type { AgingReport, AgingSide } from './aging';
export { createContact, getContact, listContacts, presentContact, updateContact } from './contacts';
export type { Contact } from './contacts';
export {
  convertEstimate,
  createDocument,
  getDocument,
  listDocuments,
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
  listItems,
  listTaxRates,
  presentItem,
  presentTaxRate,
  updateItem,
  updateTaxRate,
} from './items';
export type { Item } from './items';
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
