"""Writer for Megatron indexed datasets (``MMIDIDX`` version 1, ``.bin`` + ``.idx``).

The layout matches ``megatron.core.datasets.indexed_dataset._IndexWriter``:

``.idx`` = header ``b"MMIDIDX\\x00\\x00"``, ``<Q`` version 1, ``<B`` dtype code,
``<Q`` sequence count, ``<Q`` document-index count, int32 sequence lengths,
int64 sequence byte pointers, int64 document indices (``[0, 1, ..., n]``, one
sequence per document). ``.bin`` = the concatenated token ids in that dtype.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from .report import named_os_error, tmp_path_for

INDEX_HEADER = b"MMIDIDX\x00\x00"
_DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint16": 8}


def dtype_for_vocab(vocab_size: int) -> str:
    """Return the numpy dtype name Megatron uses for a vocabulary: uint16 below 65500, else int32."""
    return "uint16" if vocab_size < 65500 else "int32"


class IndexedDatasetWriter:
    """Stream documents into ``<prefix>.bin`` and write ``<prefix>.idx`` on :meth:`finalize`.

    Files are written under temporary names unique to this writer
    (:func:`~nemotron.data_prep.report.tmp_path_for`) and renamed into place by
    :meth:`finalize`, so a crash never leaves a half-written dataset under the
    final name and two writers never share a file. An ``OSError`` names the file.
    """

    def __init__(self, prefix: str | os.PathLike[str], dtype: str) -> None:
        import numpy as np

        if dtype not in _DTYPE_CODES:
            raise ValueError(f"unsupported dtype {dtype!r}")
        self.prefix = Path(prefix)
        self.dtype = dtype
        self._np_dtype = np.dtype(dtype)
        self._lengths: list[int] = []
        self._bin_path = self.prefix.with_name(self.prefix.name + ".bin")
        self._bin_tmp = tmp_path_for(self._bin_path)
        self._idx_tmp: Path | None = None
        try:
            self._bin = open(self._bin_tmp, "wb")  # noqa: SIM115 - closed in finalize/abort
        except OSError as exc:
            raise named_os_error(exc, self._bin_path) from exc
        self.num_tokens = 0

    def add_document(self, tokens: Any) -> None:
        """Append one document (a sequence of token ids) as one sequence."""
        import numpy as np

        arr = np.asarray(tokens, dtype=self._np_dtype)
        try:
            self._bin.write(arr.tobytes(order="C"))
        except OSError as exc:
            raise named_os_error(exc, self._bin_path) from exc
        self._lengths.append(int(arr.size))
        self.num_tokens += int(arr.size)

    @property
    def num_documents(self) -> int:
        """Number of documents written so far."""
        return len(self._lengths)

    def finalize(self) -> tuple[Path, Path]:
        """Write the index, rename both files into place and return ``(bin_path, idx_path)``."""
        try:
            return self._finalize()
        except OSError as exc:
            raise named_os_error(exc, self._bin_path) from exc

    def _finalize(self) -> tuple[Path, Path]:
        import numpy as np

        self._bin.close()
        lengths = np.asarray(self._lengths, dtype=np.int32)
        pointers = np.zeros(len(lengths), dtype=np.int64)
        if len(lengths) > 1:
            pointers[1:] = np.cumsum(lengths[:-1].astype(np.int64)) * self._np_dtype.itemsize
        doc_idx = np.arange(len(lengths) + 1, dtype=np.int64)
        idx_path = self.prefix.with_name(self.prefix.name + ".idx")
        idx_tmp = self._idx_tmp = tmp_path_for(idx_path)
        with open(idx_tmp, "wb") as f:
            f.write(INDEX_HEADER)
            f.write(struct.pack("<Q", 1))
            f.write(struct.pack("<B", _DTYPE_CODES[self.dtype]))
            f.write(struct.pack("<Q", len(lengths)))
            f.write(struct.pack("<Q", len(doc_idx)))
            f.write(lengths.tobytes(order="C"))
            f.write(pointers.tobytes(order="C"))
            f.write(doc_idx.tobytes(order="C"))
        os.replace(self._bin_tmp, self._bin_path)
        os.replace(idx_tmp, idx_path)
        return self._bin_path, idx_path

    def abort(self) -> None:
        """Close and delete the temporary files."""
        try:
            self._bin.close()
        except OSError:  # a full disk fails the last flush too
            pass
        for tmp in (self._bin_tmp, self._idx_tmp):
            if tmp is not None:
                tmp.unlink(missing_ok=True)
