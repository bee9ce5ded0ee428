import PDFDocument from 'pdfkit';
import { describe, expect, it } from 'vitest';
import { indexFontMetrics } from './render';

describe('the standard fonts’ metrics, indexed by glyph', () => {
  it('measure every text as pdfkit’s own tables do, kerning included', () => {
    const texts = ['AVATAR Yo', 'WAVE, Tyre & Co.', '(1,234,567.89)', 'Payée — Ünited “Føods”', 'LT.Vo7', ''];
    const fonts = ['Helvetica', 'Helvetica-Bold', 'Times-Roman', 'Courier'];
    const measure = () => {
      const doc = new PDFDocument({ autoFirstPage: false });
      return fonts.flatMap((font) => texts.map((text) => doc.font(font).fontSize(9).widthOfString(text)));
    };
    const before = measure();
    indexFontMetrics(new PDFDocument({ autoFirstPage: false }).font('Helvetica'));
    expect(measure()).toEqual(before);
    // Kerned: 'AV' is narrower than 'A' and 'V' apart.
    const doc = new PDFDocument({ autoFirstPage: false }).font('Helvetica').fontSize(9);
    expect(doc.widthOfString('AV')).toBeLessThan(doc.widthOfString('A') + doc.widthOfString('V'));
  });
});
