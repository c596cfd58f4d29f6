{
  # The prepared-nonce addon (nonces.c). It compiles libsecp256k1 from the source the `secp256k1`
  # package ships, with that package's own settings (its binding.gyp), as one unit with nonces.c.
  'targets': [
    {
      'target_name': 'nonces',
      'sources': ['nonces.c'],
      'include_dirs': [
        '<(secp256k1_dir)',
        '<(secp256k1_dir)/src',
        '<(secp256k1_dir)/include',
      ],
      'cflags': ['-O2', '-Wno-unused-function', '-Wno-nonnull-compare'],
      'defines': ['NAPI_VERSION=8'],
    },
  ],
}
