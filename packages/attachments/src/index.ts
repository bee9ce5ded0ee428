/** Source documents: files attached to the records they prove, stored in Postgres or S3-compatible storage. */
export { ALLOWED_TYPES, detectType, looksLikeCsv, SNIFF_BYTES } from './detect';
export type { AllowedType, DetectedType } from './detect';
export { attachmentStoresFrom, CHUNK_BYTES, PostgresBlobStore, S3BlobStore, s3StoreFrom, storeOf } from './store';
export type { AttachmentStoreConfig, AttachmentStores, BlobStore, S3StoreOptions } from './store';
export {
  DEFAULT_ATTACHMENT_MAX_BYTES,
  discardBlob,
  purgeAbandonedBlobs,
  receiveFile,
  refusedType,
  tooLarge,
} from './receive';
export type { ReceivedFile } from './receive';
export {
  attachmentFile,
  attachmentsAtOffset,
  attachmentsOf,
  createAttachment,
  deleteAttachment,
  ENTITY_TYPES,
  getAttachment,
  linkAttachment,
  linkedRecordKinds,
  listAttachments,
  openAttachment,
  recordDownload,
  recordsWithAttachments,
  removeOrphan,
  unlinkAttachment,
} from './attachments';
export type {
  Attachment,
  AttachmentContent,
  AttachmentFile,
  AttachmentFilter,
  AttachmentLink,
  DeletedAttachment,
  EntityRef,
  EntityType,
  NewAttachment,
} from './attachments';
export { DOWNLOAD_LINK_TTL_SECONDS, downloadLinkKeysFrom, signDownload, signedDownload, verifyDownload } from './links';
export type { DownloadLinkKeys, DownloadLinkTarget, SignedDownload } from './links';
export { moveCompanyFiles } from './move';
export type { MoveResult } from './move';
export { receiptPdf } from './sample';
