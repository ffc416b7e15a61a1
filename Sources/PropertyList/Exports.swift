// Property lists' values, writing, and binary and JSON reading, for every
// program that imports PropertyList; this module adds reading XML through
// libxml2. Programs that never read XML (the banners) import
// PropertyListValues alone and never load libxml2.
@_exported import PropertyListValues
