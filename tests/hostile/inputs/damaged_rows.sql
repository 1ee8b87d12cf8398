-- SQLite rows are input too: a kfuse trace whose rows point nowhere or hold impossible values. Applied to a kfuse
-- trace imported from examples/traces/demo_chain.json.
-- launches of a function and on a stream that do not exist
UPDATE launch SET function_id = 999 WHERE id = 2;
UPDATE launch SET stream_id = 4242 WHERE id = 3;
-- pointer arguments naming parameters out of range, an allocation that does not exist, and not JSON at all
UPDATE launch SET pointer_args = '[[2147483647,139715286138880,1,0],[-1,139715294527488,3,0]]' WHERE id = 5;
UPDATE launch SET pointer_args = '[[0,139715286138880,987654,0]]' WHERE id = 6;
UPDATE launch SET pointer_args = '[[0,1,' WHERE id = 7;
-- a parameter row with an index out of range and negative sizes
INSERT INTO function_param(function_id, idx, offset, size, type, access) VALUES (1, 2147483647, -8, -4, 'u32', 'read');
INSERT INTO function_param(function_id, idx, offset, size, type, access) VALUES (1, -1, 0, 8, 'ptr', 'write');
UPDATE allocation SET size = -4096 WHERE id = 2;
UPDATE memcpy SET bytes = -1 WHERE id = 1;
-- launch shapes no GPU accepts
UPDATE launch SET grid_x = 4294967295, grid_y = 4294967295, block_x = 0 WHERE id = 8;
UPDATE launch SET arg_bytes = X'00' WHERE id = 9;
-- a module image that does not parse as PTX
UPDATE module_image SET bytes = CAST('.version 7.0 garbage {{{ %param99999999999' AS BLOB);
