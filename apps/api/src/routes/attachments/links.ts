import { type Attachment, type DownloadLinkKeys, signedDownload } from '@firm/attachments';

/** The path of an attachment's download link (its query, `expires` and `signature`, signs it). */
export const downloadPath = (organizationId: string, attachmentId: string) =>
  `/api/v1/companies/${organizationId}/attachments/${attachmentId}/download`;

/** A link that downloads the attachment without a credential for 15 minutes, at `origin`. */
export function downloadLinkOf(
  keys: DownloadLinkKeys,
  origin: string,
  a: Pick<Attachment, 'id' | 'organizationId'>,
  now?: Date,
): { downloadUrl: string; downloadUrlExpiresAt: string } {
  const signed = signedDownload(keys, a.organizationId, a.id, now);
  return {
    downloadUrl: `${origin}${downloadPath(a.organizationId, a.id)}?${signed.query}`,
    downloadUrlExpiresAt: signed.expiresAt,
  };
}
