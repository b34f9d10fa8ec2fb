// A transport speaks the core's values (promises, errors, headers), and so does whoever imports it.
@_exported import TernCore
