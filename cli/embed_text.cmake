# Writes a C++ source defining `const char* const <NAME>` with the contents of INPUT (a raw string literal),
# so the binary carries a document: cmake -DINPUT=... -DOUTPUT=... -DNAME=... -P embed_text.cmake
file(READ "${INPUT}" text)
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by cli/embed_text.cmake; do not edit.\nextern const char* const ${NAME};\nconst char* const ${NAME} = R\"kfuse_embed(${text})kfuse_embed\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
