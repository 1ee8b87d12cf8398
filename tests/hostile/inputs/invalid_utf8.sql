-- Strings that are not UTF-8, as a recording of a program with a Latin-1 file name on its command line, or a
-- module whose kernel names carry stray bytes, leaves them. Applied to a kfuse trace imported from
-- examples/traces/demo_chain.json.
UPDATE kfuse_meta SET value = CAST(X'2E2F656C656D656E74776973655F636861696E202D2D696E70757420646F6E6EE965732E646174' AS TEXT)
  WHERE key = 'command_line';
UPDATE function SET demangled_name = CAST(X'7363616C65E93C623E27' AS TEXT) WHERE id = 1;
UPDATE function SET demangled_name = CAST(X'6164645F80FF' AS TEXT) WHERE id = 2;
UPDATE kfuse_meta SET value = CAST(X'686F7374C0AF' AS TEXT) WHERE key = 'host';
