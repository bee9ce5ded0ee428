import { Type } from 'typebox';
import { CompanyParams, DataOf, IsoDate, ListQuery, PageOf, Timestamp, Uuid } from '../../schemas';

export const Organization = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    legalName: Type.Union([Type.String(), Type.Null()]),
    currency: Type.String({ description: 'ISO 4217 code of the books.' }),
    fiscalYearStartMonth: Type.Integer({ minimum: 1, maximum: 12 }),
    booksClosedThrough: Type.Union([IsoDate('Nothing can be posted or voided on or before this date.'), Type.Null()]),
    createdAt: Timestamp(),
  },
  { title: 'Organization', description: 'A client company whose books the firm keeps (also called a company).' },
);

export const OrganizationList = PageOf(Organization);
export const OrganizationOne = DataOf(Organization);
export const OrganizationListQuery = Type.Object(ListQuery);
export { CompanyParams };
