const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when the text holds a UTF-16 surrogate without its pair, which jsonb refuses and UTF-8 cannot encode. */
export function hasLoneSurrogate(value: string): boolean {
  return LONE_SURROGATE.test(value);
}

/** Text Postgres can store and compare: no NUL character (U+0000) and no unpaired surrogate. */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && !hasLoneSurrogate(value);
}
