// Labels (Go's map[string]string) in the swarm's request bodies, as dockerd decodes them: a value of the wrong JSON
// type is a 400 in Go's words (`json: cannot unmarshal object into Go struct field ServiceSpec.Labels of type string`;
// a list: `… of type map[string]string`), and a null value is Go's zero value, ''.
import { checkGoType, type GoType } from '../containers/create-types.js'

const LABELS: GoType = { k: 'map', of: { k: 'string', go: 'string' }, go: 'map[string]string' }

/** Refuses Labels that are not an object of strings (missing or null pass); `field`: the Go struct and field path (`ServiceSpec.Labels`). */
export function checkLabels (v: unknown, field: string): void {
  const [struct, ...path] = field.split('.')
  checkGoType(v, LABELS, { struct: struct as string, path })
}

/** Checked Labels as Go decodes them: {} for none, '' for a null value. */
export function labelsOf (v: unknown, field: string): Record<string, string> {
  checkLabels(v, field)
  if (v === undefined || v === null) return {}
  return Object.fromEntries(Object.entries(v as Record<string, string | null>).map(([k, x]) => [k, x ?? '']))
}
