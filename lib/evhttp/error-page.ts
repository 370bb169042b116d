// The two HTML pages evhttp generates: the built-in 404 (raw request-target HTML-escaped) and sendError's page
// (reason not escaped), byte for byte as libevent 2.1 writes them.

const ESCAPE_RE = /[<>"'&]/
const ESCAPE_RE_G = /[<>"'&]/g
const ESCAPES: Record<string, string> = { '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#039;', '&': '&amp;' }

function escapeChar (ch: string): string {
  return ESCAPES[ch]!
}

/** evhttp_htmlescape(): replaces exactly < > " ' & and nothing else. */
export function htmlEscape (text: string): string {
  return ESCAPE_RE.test(text) ? text.replace(ESCAPE_RE_G, escapeChar) : text
}

export function notFoundPage (rawUri: string): string {
  return '<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL ' +
    htmlEscape(rawUri) + ' was not found on this server.</p></body></html>\n'
}

export function errorPage (code: number, reason: string): string {
  return '<HTML><HEAD>\n<TITLE>' + code + ' ' + reason + '</TITLE>\n</HEAD><BODY>\n<H1>' + reason +
    '</H1>\n</BODY></HTML>\n'
}
