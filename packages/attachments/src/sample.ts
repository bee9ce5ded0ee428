/** A small PDF of a receipt (pdfkit, no timestamps: the same text gives the same bytes). */
export async function receiptPdf(text = 'Receipt: Office Supply Co, $42.50', pad = 0): Promise<Buffer> {
  // Loaded when a receipt is drawn (the demo seed, tests), not by every process that files attachments.
  const { default: PDFDocument } = await import('pdfkit');
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({ size: 'A6', info: { CreationDate: new Date(0) }, compress: false });
    const parts: Buffer[] = [];
    doc.on('data', (b: Buffer) => parts.push(b));
    doc.on('end', () => resolve(Buffer.concat(parts)));
    doc.on('error', reject);
    doc.fontSize(10).text(text);
    // Padding as a PDF comment after the end: still a PDF, as long as asked for.
    doc.end();
  }).then((pdf) =>
    pad > 0 ? Buffer.concat([pdf as Buffer, Buffer.from(`%${'x'.repeat(pad - 2)}\n`)]) : (pdf as Buffer),
  );
}
