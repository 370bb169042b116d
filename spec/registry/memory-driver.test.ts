import { MemoryDriver } from '../../lib/registry/storage/memory-driver.js'
import { driverSuite } from './storage-suite.js'

driverSuite('memory', async () => ({ driver: new MemoryDriver(), cleanup: async () => {} }))
