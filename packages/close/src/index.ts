/** Month-end closes: the checklist computed from the books, sign-offs, finishing with stored evidence, reopening. */
export {};
