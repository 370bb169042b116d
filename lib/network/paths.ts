// The networking state on disk, in one place.
//
//   <data-root>/network/
//   ├── networks/<id>.json        one network: name, driver, options, labels, IPAM pools, Linux bridge name
//   └── sandboxes/<id>.json       one container's networking: mode, the networks it is attached to (aliases,
//                                 static IP), and while it runs: its namespace, endpoints (address, MAC, veth) and
//                                 published ports. Addresses in use are exactly the ones these records hold.
//   <exec-root>/netns/<id12>      a container's network namespace, bind-mounted on an empty file (a mount, not a
//                                 directory entry that survives a reboot)
import { join } from 'node:path'

export interface NetworkPaths { root: string, networks: string, sandboxes: string, netns: string }

export function networkPaths (dataRoot: string, execRoot: string): NetworkPaths {
  const root = join(dataRoot, 'network')
  return { root, networks: join(root, 'networks'), sandboxes: join(root, 'sandboxes'), netns: join(execRoot, 'netns') }
}

const ID = /^[0-9a-f]{64}$/

export function networkFile (p: NetworkPaths, id: string): string {
  if (!ID.test(id)) throw new Error(`invalid network id ${id}`)
  return join(p.networks, `${id}.json`)
}

export function sandboxFile (p: NetworkPaths, id: string): string {
  if (!ID.test(id)) throw new Error(`invalid container id ${id}`)
  return join(p.sandboxes, `${id}.json`)
}

export function netnsFile (p: NetworkPaths, id: string): string {
  return join(p.netns, id.slice(0, 12))
}
