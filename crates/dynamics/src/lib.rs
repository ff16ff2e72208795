//! Articulated rigid-body dynamics (SPARSE §2.2.1). Work in progress (issue 13).
